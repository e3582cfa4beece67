package simulator

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Entities of the simulated fleet with their pre-built series.

type endpointSim struct {
	cfg        *fleet.Endpoint
	arn        string
	dims       []string // EndpointName, VariantName
	groups     []*groupSim
	insts      []*instSim
	invoke     vendedCounts
	latency    *latencyPair // ModelLatency, OverheadLatency
	firstChunk *latencyPair // FirstChunkModelLatency, FirstChunkOverheadLatency: streamed requests
	byAZType   map[string]*azTypeSim
	azTypes    []*azTypeSim // byAZType in a stable order
	zeroAZ     string       // az-imbalance: this AZ receives no traffic during the incident
	failShare  float64      // bad-config: this share of requests fails during the incident
	// Per-endpoint state, so that endpoints step in parallel.
	rng    *rand.Rand
	ls     labelSet
	acct   []string            // @aws.account (the endpoint's) and @aws.region
	tags   map[string][]string // fleet tag family → the endpoint's "@aws.tag.<Key>" label pairs on it
	events map[string]*series  // sparse event series, built on first use
}

type azTypeSim struct {
	inv        series
	n          uint64
	firstChunk *latencyPair // FirstChunk*ByAzByInstanceType
}

// vendedCounts are the delta count series of one dimension set.
type vendedCounts struct {
	inv, e4xx, e5xx, model *series
	nInv, n4, n5, nModel   uint64
}

// groupSim is an inference component, or the single model of a single-model endpoint.
type groupSim struct {
	ep      *endpointSim
	ic      *fleet.InferenceComponent // nil for single-model endpoints
	name    string                    // IC name or "" for single-model endpoints
	engine  string
	model   fleet.Model
	traffic fleet.Traffic
	key     uint64 // seed for bursts
	// prefixHit is the share of prompt tokens found in the prefix cache (shared system
	// prompts and chat history), fixed per model deployment.
	prefixHit float64
	slots     []*copySim
	active    int
	// autoscaling
	scaling         bool
	lastScale       int64
	prevConcurrency float64 // per active copy, last step
	invoke          vendedCounts
	latency         *latencyPair // ModelLatencyForIc, OverheadLatencyForIc; nil without an IC
	concurrency     *series
	// Scenario effects, active from incidentFrom on.
	floorConcurrency    float64 // offered concurrency per copy is at least this
	promptFactor        float64
	maxSeqs             int
	noScaling           bool
	slowDownload        bool
	forcedColdStarts    []int64 // offsets from the anchor (ms)
	nextForcedColdStart int
	firstSlowStart      int64   // ms: the first cold start with a slow download (slow-cold-start)
	itlFactor           float64 // bad-deploy: decoding is this much slower (1 = not)
}

type copySim struct {
	g                          *groupSim
	inst                       *instSim
	containerID, containerName string
	labels                     []string
	active                     bool
	backlog                    float64
	st                         engineState
	fbPerGPU                   float64 // weights + KV reservation + context, MiB
	kvTokens                   float64
	arrivals, completed        counter
	streamed                   counter // completed requests that were streamed
	// engine series (vLLM and SGLang)
	running, waiting, kv       series
	promptTok, genTok, preempt series
	prefixQ, prefixHit         series // vLLM prefix-cache counters, SGLang's hit-rate gauge in prefixHit
	nPrefixQ, nPrefixHit       float64
	success                    [4]series
	ttft, itl, e2e, queue      *histSeries
	nPrompt, nGen, nPreempt    float64
	finished                   [4]counter
	// DJL series
	djlLatency, djl2xx, djl5xx, djlTPS series
	n2xx, n5xx                         float64
	// Vended per-copy variants (IC copies only): ForIcByInstanceIdByContainerId.
	invoke   vendedCounts
	latency  *latencyPair
	slowdown float64 // ITL factor of a throttled GPU under the copy (1 = none)
}

var finishedReasons = [4]string{"stop", "length", "abort", "error"}

// abortIdx is "abort" in finishedReasons.
const abortIdx = 2

// finishedShare is the mix of finish reasons for completed requests.
var finishedShare = [4]float64{0.78, 0.205, 0.012, 0.003}

type instSim struct {
	ep                                          *endpointSim
	id                                          string
	placed                                      fleet.Placed
	host                                        []string
	gpus                                        []*gpuSim
	copies                                      []*copySim
	cpu                                         [4][4]series
	cpuSec                                      [4][4]float64
	memTotal, memAvail, fsSize, fsAvail, diskIO series
	diskSec                                     float64
	download                                    int64 // ms until which a model download keeps the disk busy
	invoke                                      vendedCounts
	latency                                     *latencyPair // ModelLatencyByInstanceId, OverheadLatencyByInstanceId
	azType                                      *azTypeSim   // the endpoint's per-AZ-and-type series
	leak                                        bool         // gpu-memory-leak
}

var cpuModes = [4]string{"idle", "user", "system", "iowait"}

type gpuSim struct {
	inst        *instSim
	index       int
	owner       *copySim // slot that owns this GPU, nil if none
	owned, free dcgmSet  // the GPU's series with and without its owner's labels
	jitter      float64
	// Error state, which outlives a change of owner (DCGM counts since driver load).
	degraded       bool // gpu-degrade
	xid            float64
	eccSBE, eccDBE float64
}

// build creates every entity and series of the fleet.
func (s *Simulator) build() error {
	f := s.f
	for ei := range f.Endpoints {
		cfg := &f.Endpoints[ei]
		layout, err := fleet.Place(cfg)
		if err != nil {
			return fmt.Errorf("endpoint %s: %w", cfg.Name, err)
		}
		account := f.AccountOf(cfg)
		acct := []string{sc.LabelAccount, account, sc.LabelRegion, f.Region}
		ep := &endpointSim{cfg: cfg, byAZType: map[string]*azTypeSim{}, events: map[string]*series{}, acct: acct, tags: map[string][]string{}}
		for _, fam := range []string{fleet.TagsVended, fleet.TagsEngine, fleet.TagsDCGM, fleet.TagsNode} {
			ep.tags[fam] = s.tagLabels(cfg.Tags, fam)
		}
		// Each endpoint has its own random stream so endpoints can be stepped in parallel
		// and still give the same values for a seed.
		ep.rng = rand.New(rand.NewPCG(uint64(s.seed), s.hash(cfg.Name, "rng"))) // #nosec G115 G404 -- a seeded, reproducible simulation: the seed's bits, not a secret
		ls := &ep.ls
		ep.arn = fmt.Sprintf("arn:aws:sagemaker:%s:%s:endpoint/%s", f.Region, account, strings.ToLower(cfg.Name))
		ep.dims = []string{sc.DimEndpointName, cfg.Name, sc.DimVariantName, cfg.Variant}
		epLabels := []string{sc.LabelEndpoint, cfg.Name, sc.LabelVariant, cfg.Variant}
		vend := append([]string{sc.LabelScopeName, sc.ScopeSageMakerVended, sc.LabelTemporality, sc.TemporalityDelta, sc.LabelResourceID, ep.arn}, ep.tags[fleet.TagsVended]...)
		ep.invoke = newVendedCounts(ls, sc.Invocations, sc.Invocation4XXErrors, sc.Invocation5XXErrors, sc.InvocationModelErrors, ep.dims, vend, acct)
		ep.latency = newLatencyPair(ls, sc.ModelLatency, sc.OverheadLatency, ep.dims, vend, acct)
		ep.firstChunk = newLatencyPair(ls, sc.FirstChunkModelLatency, sc.FirstChunkOverheadLatency, ep.dims, vend, acct)

		for ii, p := range layout.Instances {
			in := &instSim{ep: ep, placed: p}
			in.id = fmt.Sprintf("i-0%016x", s.hash(cfg.Name, "instance", strconv.Itoa(ii)))
			in.host = []string{sc.LabelHostID, in.id, sc.LabelHostType, p.Type, sc.LabelAZ, p.AZ}
			s.buildNode(in, epLabels)
			byInst := append([]string{sc.DimInstanceID, in.id}, ep.dims...)
			in.invoke = newVendedCounts(ls, sc.InvocationsByInstanceID, sc.Invocation4XXErrorsByInstance, sc.Invocation5XXErrorsByInstance, sc.InvocationModelErrorsByInstance, byInst, vend, acct)
			in.latency = newLatencyPair(ls, sc.ModelLatencyByInstanceID, sc.OverheadLatencyByInstanceID, byInst, vend, acct)
			for g := 0; g < p.GPUs; g++ {
				gpu := &gpuSim{inst: in, index: g, jitter: float64(s.hash(in.id, strconv.Itoa(g))%400)/100 - 2}
				s.buildDCGM(gpu, nil, epLabels)
				in.gpus = append(in.gpus, gpu)
			}
			key := p.AZ + "|" + p.Type
			if ep.byAZType[key] == nil {
				dims := append([]string{sc.DimRegion, f.Region, sc.DimAvailabilityZone, p.AZ, sc.DimInstanceType, p.Type}, ep.dims...)
				ep.byAZType[key] = &azTypeSim{inv: ls.make(sc.InvocationsByAzByInstanceType, sc.TypeCounter, dims, vend, acct),
					firstChunk: newLatencyPair(ls, sc.FirstChunkModelLatencyByAZ, sc.FirstChunkOverheadLatencyByAZ, dims, vend, acct)}
				ep.azTypes = append(ep.azTypes, ep.byAZType[key])
			}
			in.azType = ep.byAZType[key]
			ep.insts = append(ep.insts, in)
			s.insts = append(s.insts, in)
		}

		if cfg.IsIC() {
			for j := range cfg.InferenceComponents {
				ic := &cfg.InferenceComponents[j]
				g := s.newGroup(ep, ic.Name, ic.Engine, *f.ModelByName(ic.Model), ic.Traffic)
				g.ic, g.active, g.scaling = ic, ic.Copies, true
				icARN := fmt.Sprintf("arn:aws:sagemaker:%s:%s:inference-component/%s", f.Region, account, strings.ToLower(ic.Name))
				icVend := append([]string{sc.LabelScopeName, sc.ScopeSageMakerVended, sc.LabelTemporality, sc.TemporalityDelta, sc.LabelResourceID, icARN}, s.tagLabels(ic.Tags, fleet.TagsVended)...)
				icDims := []string{sc.DimInferenceComponentName, ic.Name}
				g.invoke = newVendedCounts(ls, sc.InvocationsForIC, sc.Invocation4XXErrorsForIC, sc.Invocation5XXErrorsForIC, "", icDims, icVend, acct)
				g.latency = newLatencyPair(ls, sc.ModelLatencyForIC, sc.OverheadLatencyForIC, icDims, icVend, acct)
				c := ls.make(sc.ConcurrentRequestsPerCopy, sc.TypeGauge, icDims, icVend, acct)
				g.concurrency = &c
				ep.groups = append(ep.groups, g)
			}
		} else {
			g := s.newGroup(ep, "", cfg.Engine, *f.ModelByName(cfg.Model), cfg.Traffic)
			g.active = len(layout.Slots)
			ep.groups = append(ep.groups, g)
		}
		for _, sl := range layout.Slots {
			g := ep.groups[max(sl.IC, 0)]
			s.buildCopy(g, ep.insts[sl.Instance], sl, epLabels, vend)
		}
		for _, g := range ep.groups {
			for i, c := range g.slots {
				c.active = i < g.active
			}
		}
		s.eps = append(s.eps, ep)
	}
	return nil
}

// tagLabels are a resource's tags as "@aws.tag.<Key>" label pairs when series of the family
// carry them: only with enrichment on, and only on the fleet's tag families.
func (s *Simulator) tagLabels(tags map[string]string, family string) []string {
	if s.noVended || !s.f.Tagged(family) {
		return nil
	}
	out := make([]string, 0, 2*len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, sc.LabelTagPrefix+k, tags[k])
	}
	return out
}

func (s *Simulator) newGroup(ep *endpointSim, name, engine string, m fleet.Model, t fleet.Traffic) *groupSim {
	return &groupSim{ep: ep, name: name, engine: engine, model: m, traffic: t, key: s.hash(ep.cfg.Name, name, "traffic"), promptFactor: 1, itlFactor: 1, maxSeqs: m.MaxNumSeqs,
		prefixHit: 0.15 + 0.5*float64(s.hash(ep.cfg.Name, name, "prefix")%1000)/1000}
}

func newVendedCounts(ls *labelSet, inv, e4, e5, model string, groups ...[]string) vendedCounts {
	mk := func(name string) *series {
		if name == "" {
			return nil
		}
		x := ls.make(name, sc.TypeCounter, groups...)
		return &x
	}
	return vendedCounts{inv: mk(inv), e4xx: mk(e4), e5xx: mk(e5), model: mk(model)}
}

// latencyPair is a vended model/overhead latency pair of one dimension set: delta µs
// histograms on the same buckets, observed and written together.
type latencyPair struct{ model, overhead *histSeries }

func newLatencyPair(ls *labelSet, model, overhead string, groups ...[]string) *latencyPair {
	return &latencyPair{
		model:    ls.hist(model, vendedLatencyBuckets, true, groups...),
		overhead: ls.hist(overhead, vendedLatencyBuckets, true, groups...),
	}
}

// observe adds n requests with the given mean model time (shape sigma) and overhead, in µs.
func (p *latencyPair) observe(n uint64, modelUS, sigma, overheadUS float64) {
	p.model.observe(n, modelUS, sigma)
	p.overhead.observe(n, overheadUS, sigmaOver)
}

func (s *Simulator) buildNode(in *instSim, epLabels []string) {
	ls := &in.ep.ls
	base := [][]string{in.host, epLabels, in.ep.acct, in.ep.tags[fleet.TagsNode]}
	for c := 0; c < 4; c++ {
		for m, mode := range cpuModes {
			in.cpu[c][m] = ls.make(sc.NodeCPUSeconds, sc.TypeCounter, append(base, []string{sc.LabelCPU, strconv.Itoa(c), sc.LabelCPUMode, mode})...)
		}
	}
	in.memTotal = ls.make(sc.NodeMemTotal, sc.TypeGauge, base...)
	in.memAvail = ls.make(sc.NodeMemAvailable, sc.TypeGauge, base...)
	fs := []string{sc.LabelDevice, "/dev/nvme0n1p1", sc.LabelFSType, "xfs", sc.LabelMountpoint, "/"}
	in.fsSize = ls.make(sc.NodeFilesystemSize, sc.TypeGauge, append(base, fs)...)
	in.fsAvail = ls.make(sc.NodeFilesystemAvail, sc.TypeGauge, append(base, fs)...)
	in.diskIO = ls.make(sc.NodeDiskIOTimeSeconds, sc.TypeCounter, append(base, []string{sc.LabelDevice, "nvme0n1"})...)
}

// buildDCGM builds the GPU's free label set, or its owned label set when owner is set.
func (s *Simulator) buildDCGM(g *gpuSim, owner *copySim, epLabels []string) {
	in := g.inst
	ls := &in.ep.ls
	u := s.hash(in.id, "gpu", strconv.Itoa(g.index))
	gpuLabels := []string{
		sc.LabelGPU, strconv.Itoa(g.index),
		sc.LabelGPUUUID, fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", uint32(u), uint16(u>>32), uint16(u>>48), uint16(u>>16), u&0xffffffffffff), // #nosec G115 -- slices of a hash make the UUID
		sc.LabelGPUDevice, "nvidia" + strconv.Itoa(g.index),
		sc.LabelGPUModelName, in.placed.GPUModel,
		sc.LabelGPUPCIBusID, fmt.Sprintf("00000000:%02X:00.0", 0x10+g.index*0x10),
	}
	dst, extra := &g.free, epLabels
	if owner != nil {
		dst, extra = &g.owned, owner.labels
	}
	dst.build(ls, gpuLabels, extra, in.host, in.ep.acct, in.ep.tags[fleet.TagsDCGM])
}

func (s *Simulator) buildCopy(g *groupSim, in *instSim, sl fleet.Slot, epLabels, vend []string) {
	ep := g.ep
	ls := &ep.ls
	c := &copySim{g: g, inst: in, slowdown: 1}
	name := g.name
	if name == "" {
		name = ep.cfg.Name
	}
	c.containerName = name
	c.containerID = fmt.Sprintf("%s-%d-%08x", name, sl.Copy, uint32(s.hash(name, strconv.Itoa(sl.Copy), in.id))) // #nosec G115 -- the low 32 bits of a hash make the id
	c.labels = append([]string{}, epLabels...)
	if g.name != "" {
		c.labels = append(c.labels, sc.LabelInferenceComp, g.name)
	}
	c.labels = append(c.labels, sc.LabelContainerID, c.containerID, sc.LabelContainerName, c.containerName, sc.LabelFramework, g.engine)
	for _, gi := range sl.GPUs {
		gpu := in.gpus[gi]
		gpu.owner = c
		s.buildDCGM(gpu, c, nil)
	}
	// GPU memory: weights split over the copy's GPUs, the KV pool the engine reserves up
	// front (vLLM gpu_memory_utilization 0.9, SGLang mem_fraction_static 0.88) and the CUDA
	// context. DJL has no paged KV pool; activations take a fifth of the rest.
	n := float64(len(sl.GPUs))
	mem := float64(in.placed.GPUMemoryMiB)
	weights := float64(g.model.WeightsMiB) / n
	frac := map[string]float64{fleet.EngineVLLM: 0.9, fleet.EngineSGLang: 0.88, fleet.EngineDJL: 0.9}[g.engine]
	kvMiB := frac*mem - weights - 450
	if g.engine == fleet.EngineDJL {
		kvMiB *= 0.2
	}
	c.fbPerGPU = weights + kvMiB + 450
	c.kvTokens = kvMiB * n * 1024 / g.model.KVKiBPerToken

	eng := s.engineLabels(c)
	hostAcct := [][]string{c.labels, in.host, ep.acct, ep.tags[fleet.TagsEngine]}
	switch g.engine {
	case fleet.EngineVLLM:
		all := append([][]string{eng}, hostAcct...)
		c.running = ls.make(sc.VLLMRunning, sc.TypeGauge, all...)
		c.waiting = ls.make(sc.VLLMWaiting, sc.TypeGauge, all...)
		c.kv = ls.make(sc.VLLMKVCacheUsage, sc.TypeGauge, all...)
		c.promptTok = ls.make(sc.VLLMPromptTokens, sc.TypeCounter, all...)
		c.genTok = ls.make(sc.VLLMGenerationTokens, sc.TypeCounter, all...)
		c.preempt = ls.make(sc.VLLMPreemptions, sc.TypeCounter, all...)
		for i, r := range finishedReasons {
			c.success[i] = ls.make(sc.VLLMRequestSuccess, sc.TypeCounter, append(all, []string{sc.LabelFinishedReason, r})...)
		}
		c.prefixQ = ls.make(sc.VLLMPrefixQueries, sc.TypeCounter, all...)
		c.prefixHit = ls.make(sc.VLLMPrefixHits, sc.TypeCounter, all...)
		c.ttft = ls.hist(sc.VLLMTTFT, vllmTTFTBuckets, false, all...)
		c.itl = ls.hist(sc.VLLMITL, vllmITLBuckets, false, all...)
		c.e2e = ls.hist(sc.VLLME2E, vllmE2EBuckets, false, all...)
		c.queue = ls.hist(sc.VLLMQueueTime, vllmE2EBuckets, false, all...)
	case fleet.EngineSGLang:
		// Scheduler metrics carry the rank labels; tokenizer metrics only model_name.
		sched := append([][]string{eng, {sc.LabelSGLEngineType, "unified", sc.LabelSGLTPRank, "0", sc.LabelSGLPPRank, "0", sc.LabelSGLMoEEPRank, "0"}}, hostAcct...)
		tok := append([][]string{eng}, hostAcct...)
		c.running = ls.make(sc.SGLangRunning, sc.TypeGauge, sched...)
		c.waiting = ls.make(sc.SGLangQueued, sc.TypeGauge, sched...)
		c.kv = ls.make(sc.SGLangTokenUsage, sc.TypeGauge, sched...)
		c.preempt = ls.make(sc.SGLangRetracted, sc.TypeGauge, sched...)
		c.prefixHit = ls.make(sc.SGLangCacheHitRate, sc.TypeGauge, sched...)
		c.success[abortIdx] = ls.make(sc.SGLangAborted, sc.TypeCounter, tok...) // SGLang counts aborts, not the other reasons
		c.promptTok = ls.make(sc.SGLangPromptTokens, sc.TypeCounter, tok...)
		c.genTok = ls.make(sc.SGLangGenerationTokens, sc.TypeCounter, tok...)
		c.ttft = ls.hist(sc.SGLangTTFT, sglTTFTBuckets, false, tok...)
		c.itl = ls.hist(sc.SGLangITL, sglITLBuckets, false, tok...)
		c.e2e = ls.hist(sc.SGLangE2E, sglE2EBuckets, false, tok...)
		c.queue = ls.hist(sc.SGLangQueueTime, sglQueueBuckets, false, sched...)
	case fleet.EngineDJL:
		all := append([][]string{eng}, hostAcct...)
		c.djlLatency = ls.make(sc.DJLRequestLatency, sc.TypeGauge, all...)
		c.djl2xx = ls.make(sc.DJLResponse2XX, sc.TypeCounter, all...)
		c.djl5xx = ls.make(sc.DJLResponse5XX, sc.TypeCounter, all...)
		c.djlTPS = ls.make(sc.DJLTokenThroughput, sc.TypeGauge, all...)
	}
	if g.name != "" {
		dims := append([]string{sc.DimInferenceComponentName, g.name, sc.DimInstanceID, in.id, sc.DimContainerID, c.containerID}, ep.dims...)
		c.invoke = newVendedCounts(ls, sc.InvocationsForICByInstanceID, sc.Invocation4XXErrorsForICByInstanceID, sc.Invocation5XXErrorsForICByInstanceID, sc.InvocationModelErrorsForICByInstance, dims, vend, ep.acct)
		c.latency = newLatencyPair(ls, sc.ModelLatencyForICByInstanceID, sc.OverheadLatencyForICByInstanceID, dims, vend, ep.acct)
	}
	g.slots = append(g.slots, c)
	in.copies = append(in.copies, c)
}

func (s *Simulator) engineLabels(c *copySim) []string {
	l := []string{sc.LabelModelName, c.g.model.ServedName}
	if c.g.engine == fleet.EngineVLLM {
		l = append(l, sc.LabelVLLMEngine, "0")
	}
	return l
}
