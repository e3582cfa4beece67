package simulator

import (
	"math"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Error shares of healthy traffic.
const (
	share4xx        = 0.002
	share5xx        = 0.0003
	shareModelError = 0.0001
	// streamShare of completed requests use InvokeEndpointWithResponseStream (chat clients
	// mostly stream); only those have FirstChunk* latencies.
	streamShare = 0.7
)

// tickEndpoint computes and appends one step of an endpoint at t; dt is the step in seconds.
// It touches only the endpoint's own state, so endpoints can step in parallel.
func (s *Simulator) tickEndpoint(w *writer, ep *endpointSim, t int64, dt float64, first bool) {
	for _, g := range ep.groups {
		if first {
			// Initial provisioning: every copy's cold start at the start of the history.
			for _, c := range g.slots[:g.active] {
				s.coldStart(w, c, t)
			}
		} else {
			s.autoscale(w, g, t)
			s.rebalance(w, g, t)
			s.forcedColdStart(w, g, t)
		}
		s.stepGroup(w, g, t, dt)
	}
	for _, in := range ep.insts {
		s.stepInstance(w, in, t, dt)
	}
	w.counts(&ep.invoke, t)
	w.latency(ep.latency, t)
	w.latency(ep.firstChunk, t)
	for _, a := range ep.azTypes {
		w.float(&a.inv, t, float64(a.n))
		a.n = 0
		w.latency(a.firstChunk, t)
	}
}

// params are the group's engine inputs; during an incident they carry the scenario's effects.
func (g *groupSim) params(incident bool) engineParams {
	m := g.model
	p := engineParams{
		prompt: float64(m.PromptTokens), output: float64(m.OutputTokens),
		maxSeqs: float64(m.MaxNumSeqs), refBatch: float64(m.MaxNumSeqs),
		itl: m.ITLMillis / 1000, prefillTokensPS: m.PrefillTokensPerS,
	}
	if incident {
		p.prompt *= g.promptFactor
		p.maxSeqs = float64(g.maxSeqs)
		p.itl *= g.itlFactor
	}
	return p
}

func (s *Simulator) stepGroup(w *writer, g *groupSim, t int64, dt float64) {
	ep := g.ep
	inc := s.incident(t)
	rate := s.rate(g, t)
	serving := 0
	for _, c := range g.slots[:g.active] {
		if !s.drained(c, t) {
			serving++
		}
	}
	p := g.params(inc)
	var conc float64
	for _, c := range g.slots[:g.active] {
		lambda := 0.0
		if serving > 0 && !s.drained(c, t) {
			lambda = math.Max(0, rate/float64(serving)*(1+0.06*ep.rng.NormFloat64()))
		}
		arrivals := c.arrivals.add(lambda * dt)
		e4 := poisson(ep.rng, lambda*dt*share4xx)
		e5 := poisson(ep.rng, lambda*dt*share5xx)
		em := poisson(ep.rng, lambda*dt*shareModelError)
		if inc && ep.failShare > 0 {
			// The bad config's variant fails its share of requests as model errors (5XX).
			bad := min(arrivals, poisson(ep.rng, lambda*dt*ep.failShare))
			e5, em = e5+bad, em+bad
		}
		if s.crashed(c, t) {
			// The container is gone: every request routed here fails, the engine is silent.
			e5, em = arrivals, arrivals
			c.st = engineState{}
		} else {
			p.kvTokens = c.kvTokens
			pc := p
			pc.itl *= c.slowdown // a throttled GPU decodes slower
			c.st = pc.step(lambda, dt, &c.backlog)
			done := c.completed.add(c.st.throughput * dt)
			e4 += uint64(c.st.dropped) // throttled when the queue is full
			s.writeEngine(w, c, &p, done, dt, t, e5)
			overhead := 6500 + 1500*c.st.running/p.refBatch // µs of platform routing
			for _, l := range []*latencyPair{ep.latency, g.latency, c.latency, c.inst.latency} {
				if l != nil {
					l.observe(done, c.st.inference*1e6, sigmaModel, overhead)
				}
			}
			// A streamed response's first chunk leaves the container when the engine emits the
			// first token, so its model part is what TTFT measures (queue + prefill + a step).
			streamed := c.streamed.add(float64(done) * streamShare)
			ep.firstChunk.observe(streamed, c.st.ttft*1e6, sigmaTTFT, overhead)
			c.inst.azType.firstChunk.observe(streamed, c.st.ttft*1e6, sigmaTTFT, overhead)
		}
		conc += c.st.running + c.st.waiting
		for _, v := range []*vendedCounts{&ep.invoke, &g.invoke, &c.inst.invoke, &c.invoke} {
			v.nInv += arrivals
			v.n4 += e4
			v.n5 += e5
			v.nModel += em
		}
		c.inst.azType.n += arrivals
		if g.ic != nil {
			w.counts(&c.invoke, t)
			w.latency(c.latency, t)
		}
	}
	g.prevConcurrency = conc / float64(max(g.active, 1))
	if g.ic != nil {
		w.counts(&g.invoke, t)
		w.latency(g.latency, t)
		w.float(g.concurrency, t, g.prevConcurrency)
	}
}

// drained reports whether the router sends nothing to c (az-imbalance).
func (s *Simulator) drained(c *copySim, t int64) bool {
	return c.g.ep.zeroAZ != "" && c.inst.placed.AZ == c.g.ep.zeroAZ && s.incident(t)
}

func (s *Simulator) crashed(c *copySim, t int64) bool {
	return c == s.crash && t >= s.anchor-(s.lead*2/3).Milliseconds()
}

func (s *Simulator) writeEngine(w *writer, c *copySim, p *engineParams, done uint64, dt float64, t int64, e5 uint64) {
	st := &c.st
	if c.g.engine == fleet.EngineDJL {
		c.n2xx += float64(done)
		c.n5xx += float64(e5)
		w.float(&c.djlLatency, t, st.e2e*1e6)
		w.float(&c.djl2xx, t, c.n2xx)
		w.float(&c.djl5xx, t, c.n5xx)
		w.float(&c.djlTPS, t, st.throughput*p.output)
		return
	}
	c.nPrompt += float64(done) * p.prompt
	c.nGen += float64(done) * p.output
	// Longer prompts than usual (kv-saturation) are new context: fewer cached prefixes.
	hit := c.g.prefixHit * float64(c.g.model.PromptTokens) / p.prompt
	w.float(&c.running, t, math.Round(st.running))
	w.float(&c.waiting, t, math.Round(st.waiting))
	w.float(&c.kv, t, st.kv)
	w.float(&c.promptTok, t, c.nPrompt)
	w.float(&c.genTok, t, c.nGen)
	if c.g.engine == fleet.EngineVLLM {
		c.nPreempt += math.Round(st.preemptRate * dt)
		w.float(&c.preempt, t, c.nPreempt)
		for i := range c.success {
			c.finished[i].add(float64(done) * finishedShare[i])
			w.float(&c.success[i], t, c.finished[i].emitted)
		}
		c.nPrefixQ += float64(done) * p.prompt
		c.nPrefixHit += float64(done) * p.prompt * hit
		w.float(&c.prefixQ, t, c.nPrefixQ)
		w.float(&c.prefixHit, t, c.nPrefixHit)
	} else {
		// SGLang exposes retractions as a gauge of the current interval, and its radix-cache
		// hit rate as a ratio.
		w.float(&c.preempt, t, math.Round(st.preemptRate*dt))
		w.float(&c.prefixHit, t, hit)
		c.finished[abortIdx].add(float64(done) * finishedShare[abortIdx])
		w.float(&c.success[abortIdx], t, c.finished[abortIdx].emitted)
	}
	c.ttft.observe(done, st.ttft, sigmaTTFT)
	c.itl.observe(done*uint64(max(p.output-1, 1)), st.itl, sigmaITL)
	c.e2e.observe(done, st.e2e, sigmaE2E)
	c.queue.observe(done, st.queueWait, sigmaQueue)
	w.hist(c.ttft, t)
	w.hist(c.itl, t)
	w.hist(c.e2e, t)
	w.hist(c.queue, t)
}

// busy is how hard a copy works its GPUs, 0..1: saturates well before the batch cap because
// decode is memory-bound.
func (c *copySim) busy() float64 {
	if c.st.batchCap == 0 {
		return 0
	}
	return math.Min(1, c.st.running/math.Max(2, 0.35*c.st.batchCap))
}

func (s *Simulator) stepInstance(w *writer, in *instSim, t int64, dt float64) {
	p := in.placed
	mem := float64(p.GPUMemoryMiB)
	tdp := 300.0
	if mem > 60000 {
		tdp = 700
	} else if mem > 30000 {
		tdp = 400
	}
	var load float64
	active := 0
	for _, c := range in.copies {
		c.slowdown = 1 // set again below from this step's GPUs
	}
	for _, g := range in.gpus {
		c := g.owner
		noise := in.ep.rng.NormFloat64()
		if c == nil || !c.active {
			s.stepGPU(g, &g.free, t, 0, 0, mem, tdp)
			g.free.write(w, t)
			continue
		}
		active++
		fb := c.fbPerGPU
		util := 0.0
		if s.crashed(c, t) {
			fb = 0
		} else {
			util = math.Max(0, math.Min(100, 4+91*c.busy()+g.jitter+noise))
			load += c.busy()
		}
		if in.leak && t > s.origin {
			// Grows linearly to 98.5% of the GPU by the end of the history.
			frac := float64(t-s.origin) / float64(max(s.anchor-s.origin, 1))
			fb += frac * math.Max(0, 0.985*mem-fb)
		}
		fb = math.Min(fb, mem-64)
		// The copy runs at the pace of its slowest GPU (tensor parallel ranks wait for each other).
		c.slowdown = math.Max(c.slowdown, s.stepGPU(g, &g.owned, t, util, fb, mem, tdp))
		g.owned.write(w, t)
	}
	if active > 0 {
		load /= float64(len(in.gpus))
	}
	iowait := 0.003
	if t < in.download {
		iowait = 0.25
	}
	user, system := 0.04+0.22*load, 0.02+0.05*load
	for cpu := range in.cpu {
		k := 1 + 0.1*float64(cpu-1) // CPUs are not perfectly balanced
		fr := [4]float64{0, user * k, system * k, iowait}
		fr[0] = 1 - fr[1] - fr[2] - fr[3]
		for m := range cpuModes {
			in.cpuSec[cpu][m] += fr[m] * dt
			w.float(&in.cpu[cpu][m], t, in.cpuSec[cpu][m])
		}
	}
	total := float64(p.MemoryGiB) * (1 << 30)
	avail := total * math.Max(0.05, 0.9-0.04*float64(active)-0.1*load)
	w.float(&in.memTotal, t, total)
	w.float(&in.memAvail, t, avail)
	fsSize := 500.0 * (1 << 30)
	used := 30.0 * (1 << 30)
	for _, c := range in.copies {
		if c.active {
			used += float64(c.g.model.WeightsMiB) * (1 << 20)
		}
	}
	w.float(&in.fsSize, t, fsSize)
	w.float(&in.fsAvail, t, math.Max(0, fsSize-used))
	busyDisk := 0.015
	if t < in.download {
		busyDisk = 0.9
	}
	in.diskSec += busyDisk * dt
	w.float(&in.diskIO, t, in.diskSec)
	w.counts(&in.invoke, t)
	w.latency(in.latency, t)
}

// counts appends a dimension set's delta counts and starts the next interval.
func (w *writer) counts(v *vendedCounts, t int64) {
	for _, x := range []struct {
		s *series
		n *uint64
	}{{v.inv, &v.nInv}, {v.e4xx, &v.n4}, {v.e5xx, &v.n5}, {v.model, &v.nModel}} {
		if x.s != nil {
			w.float(x.s, t, float64(*x.n))
		}
		*x.n = 0
	}
}

// latency appends both histograms of a vended latency pair.
func (w *writer) latency(p *latencyPair, t int64) {
	w.hist(p.model, t)
	w.hist(p.overhead, t)
}

// autoscale moves an IC's active copies toward its target concurrency per copy, with
// SageMaker-like cooldowns, and records the scaling events.
func (s *Simulator) autoscale(w *writer, g *groupSim, t int64) {
	if g.ic == nil || (g.noScaling && s.incident(t)) {
		return
	}
	target := g.ic.TargetConcurrencyPerCopy
	since := t - g.lastScale
	switch {
	case g.prevConcurrency > target && g.active < len(g.slots) && since >= 5*60000:
		want := int(math.Ceil(g.prevConcurrency * float64(g.active) / target))
		add := min(max(want-g.active, 1), len(g.slots)-g.active)
		longest := 0.0
		for _, c := range g.slots[g.active : g.active+add] {
			c.restart()
			longest = math.Max(longest, s.coldStart(w, c, t))
		}
		g.active += add
		g.lastScale = t
		s.scalingEvent(w, g, t, 0, longest+20+10*g.ep.rng.Float64())
	case g.prevConcurrency < 0.45*target && g.active > g.ic.MinCopies && since >= 15*60000:
		g.active--
		g.slots[g.active].active = false
		g.lastScale = t
		s.scalingEvent(w, g, t, 1, 25+20*g.ep.rng.Float64())
	}
}

// rebalance moves one copy of an IC every Fleet.RebalanceMinutes when it has an idle slot:
// the copy stops on its GPUs, and a new one starts on an idle slot, on another instance
// where there is one. Which copy moves turns with time, so every copy moves in turn. A
// scenario's forced cold starts keep their copies in place.
func (s *Simulator) rebalance(w *writer, g *groupSim, t int64) {
	every := int64(s.f.RebalanceMinutes) * 60000
	if every <= 0 || g.ic == nil || g.active == 0 || g.active == len(g.slots) || len(g.forcedColdStarts) > 0 || (t-s.origin)%every != 0 {
		return
	}
	leave := int((t-s.origin)/every) % g.active
	from, to := g.slots[leave], g.active
	for i := g.active; i < len(g.slots); i++ {
		if g.slots[i].inst != from.inst {
			to = i
			break
		}
	}
	g.slots[leave], g.slots[to] = g.slots[to], g.slots[leave]
	from.active = false
	g.slots[leave].restart()
	s.coldStart(w, g.slots[leave], t)
}

// restart starts a copy's engine from zero, as a new container does.
func (c *copySim) restart() {
	c.active = true
	c.backlog, c.nPrompt, c.nGen, c.nPreempt, c.n2xx, c.n5xx, c.nPrefixQ, c.nPrefixHit = 0, 0, 0, 0, 0, 0, 0, 0
	c.finished = [4]counter{}
	for _, h := range []*histSeries{c.ttft, c.itl, c.e2e, c.queue} {
		if h != nil {
			h.reset()
		}
	}
}

func (s *Simulator) forcedColdStart(w *writer, g *groupSim, t int64) {
	// At most one event per step, so a short history cannot put two samples on one series.
	if g.lastScale != t && g.nextForcedColdStart < len(g.forcedColdStarts) && t >= s.anchor+g.forcedColdStarts[g.nextForcedColdStart] {
		// A copy is replaced (for example after a health-check failure): same slot, new start.
		c := g.slots[g.nextForcedColdStart%g.active]
		c.restart()
		s.coldStart(w, c, t)
		g.nextForcedColdStart++
	}
}

// coldStart records the provisioning phases of a copy at t and returns the total seconds.
// Download speed is what separates a healthy start from a slow one.
func (s *Simulator) coldStart(w *writer, c *copySim, t int64) float64 {
	g := c.g
	if g.ic == nil {
		return 0 // single-model endpoints have no IC provisioning events
	}
	rng := g.ep.rng
	weights := float64(g.model.WeightsMiB)
	speed := 700 * (0.8 + 0.4*rng.Float64()) // MiB/s from S3
	if g.slowDownload && s.incident(t) {
		speed = 40 * (0.8 + 0.4*rng.Float64())
		if g.firstSlowStart == 0 {
			g.firstSlowStart = t
		}
	}
	download := weights / speed
	gpuLoad := weights / (1500 * (0.8 + 0.4*rng.Float64()))
	container := 18 + 8*rng.Float64()
	total := download + gpuLoad + container + 6 + 4*rng.Float64()
	c.inst.download = max(c.inst.download, t+int64(download*1000))
	for _, v := range []struct {
		name string
		val  float64
	}{{sc.ModelDownloadTime, download}, {sc.GPULoadTime, gpuLoad}, {sc.ContainerStartTime, container}, {sc.ColdStartDuration, total}} {
		key := v.name + "|" + c.containerID
		ser := g.ep.events[key]
		if ser == nil {
			x := g.ep.ls.make(v.name, sc.TypeGauge, c.labels, c.inst.host, g.ep.acct)
			ser = &x
			g.ep.events[key] = ser
		}
		w.float(ser, t, v.val)
	}
	return total
}

var directions = [2]string{sc.ScaleOut, sc.ScaleIn}

func (s *Simulator) scalingEvent(w *writer, g *groupSim, t int64, dir int, seconds float64) {
	key := sc.ScalingE2EDuration + "|" + g.name + "|" + directions[dir]
	ser := g.ep.events[key]
	if ser == nil {
		x := g.ep.ls.make(sc.ScalingE2EDuration, sc.TypeGauge,
			[]string{sc.LabelEndpoint, g.ep.cfg.Name, sc.LabelVariant, g.ep.cfg.Variant, sc.LabelInferenceComp, g.name,
				sc.LabelScalingDirection, directions[dir], sc.LabelOperationType, sc.OperationUpdateIC}, g.ep.acct)
		ser = &x
		g.ep.events[key] = ser
	}
	w.float(ser, t, seconds)
}

// iceSim is the ice-exhaustion scenario: failed launches of one type in every AZ.
type iceSim struct {
	ep      *endpointSim
	typ     string
	azs     []string
	offsets []int64 // from the anchor, ms
	next    int
}

func (s *Simulator) iceEvents(w *writer, t int64) {
	ice := s.ice
	if ice == nil {
		return
	}
	if ice.next < len(ice.offsets) && t >= s.anchor+ice.offsets[ice.next] {
		az := ice.azs[ice.next%len(ice.azs)]
		key := sc.ICECount + "|" + ice.typ + "|" + az
		ser := s.events[key]
		if ser == nil {
			x := s.ls.make(sc.ICECount, sc.TypeGauge, []string{sc.LabelEndpoint, ice.ep.cfg.Name, sc.LabelVariant, ice.ep.cfg.Variant,
				sc.LabelEventInstanceType, ice.typ, sc.LabelEventAZ, az}, ice.ep.acct)
			ser = &x
			s.events[key] = ser
		}
		w.float(ser, t, 1)
		ice.next++
	}
}
