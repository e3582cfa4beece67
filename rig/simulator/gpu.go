package simulator

import (
	"math"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// dcgmMetric is one DCGM series and the value of the step being written.
type dcgmMetric struct {
	s series
	v float64
}

// dcgmSet is one GPU's DCGM series under one label set (free, or owned by a copy). Values are
// set by name; fields() is the only place that pairs a field with its metric name.
type dcgmSet struct {
	util, memCopyUtil, temp, memTemp, fbUsed, fbFree, smActive, power dcgmMetric
	powerLimit, smClock, throttle, xid, eccSBE, eccDBE, smOccupancy   dcgmMetric
	pcieTX, pcieRX                                                    dcgmMetric
}

type dcgmField struct {
	name string
	m    *dcgmMetric
}

func (d *dcgmSet) fields() [17]dcgmField {
	return [...]dcgmField{
		{sc.DCGMGPUUtil, &d.util}, {sc.DCGMMemCopyUtil, &d.memCopyUtil}, {sc.DCGMGPUTemp, &d.temp},
		{sc.DCGMMemoryTemp, &d.memTemp}, {sc.DCGMFBUsed, &d.fbUsed}, {sc.DCGMFBFree, &d.fbFree},
		{sc.DCGMSMActive, &d.smActive}, {sc.DCGMPowerUsage, &d.power}, {sc.DCGMPowerLimit, &d.powerLimit},
		{sc.DCGMSMClock, &d.smClock}, {sc.DCGMThrottleReasons, &d.throttle}, {sc.DCGMXIDErrors, &d.xid},
		{sc.DCGMECCSBEVolatile, &d.eccSBE}, {sc.DCGMECCDBEVolatile, &d.eccDBE}, {sc.DCGMSMOccupancy, &d.smOccupancy},
		{sc.DCGMPCIeTXBytes, &d.pcieTX}, {sc.DCGMPCIeRXBytes, &d.pcieRX},
		// A10G/L4-class GPUs have no NVLink, and DCGM exports no NVLink field for them.
	}
}

func (d *dcgmSet) build(ls *labelSet, groups ...[]string) {
	for _, f := range d.fields() {
		f.m.s = ls.make(f.name, sc.TypeGauge, groups...)
	}
}

func (d *dcgmSet) write(w *writer, t int64) {
	for _, f := range d.fields() {
		w.float(&f.m.s, t, f.m.v)
	}
}

// GPU clocks and the throttle bit reported when a GPU is idle (DCGM's "GPU idle" reason).
const (
	smClockMaxMHz  = 1710
	smClockIdleMHz = 210
	throttleIdle   = 0x1
)

// Thermal degradation (gpu-degrade): the GPU heats up over degradeRampMin minutes of the
// incident, throttles its clocks above throttleAtC, and reports a double-bit ECC error
// (XID 48) after degradeXIDMin minutes, with corrected errors climbing before it.
const (
	degradeRampMin = 30
	degradeXIDMin  = 20
	throttleAtC    = 87
	xidDoubleBit   = 48
	throttledClock = 0.55 // share of the max SM clock while throttled
)

// stepGPU sets one GPU's DCGM values for a step. util is 0–100 and fb the used framebuffer
// (MiB); tdp the board power limit (W). It returns the clock slowdown of a degraded GPU
// (1 = none) so the copy on it can run slower.
func (s *Simulator) stepGPU(g *gpuSim, d *dcgmSet, t int64, util, fb, mem, tdp float64) float64 {
	temp := 31 + 0.42*util + g.jitter
	clock, throttle, slowdown := float64(smClockMaxMHz), 0.0, 1.0
	if util == 0 {
		clock, throttle = smClockIdleMHz, throttleIdle
	}
	if g.degraded && s.incident(t) {
		mins := float64(t-s.incidentFrom) / 60000
		temp += (94 - temp) * math.Min(1, mins/degradeRampMin)
		if temp >= throttleAtC {
			clock, throttle, slowdown = smClockMaxMHz*throttledClock, sc.ThrottleHWThermal|sc.ThrottleSWThermal, 1/throttledClock
		}
		g.eccSBE += math.Floor(mins / 5) // corrected errors accumulate faster as it heats
		if mins >= degradeXIDMin && g.xid == 0 {
			g.xid, g.eccDBE = xidDoubleBit, g.eccDBE+1
		}
	}
	d.util.v = math.Round(util)
	d.memCopyUtil.v = math.Round(util * 0.5)
	d.temp.v = math.Round(temp)
	d.memTemp.v = math.Round(temp + 7)
	d.fbUsed.v = math.Round(fb)
	d.fbFree.v = math.Round(mem - fb)
	d.smActive.v = util / 100 * 0.88
	d.smOccupancy.v = util / 100 * 0.6
	d.power.v = math.Min(tdp, 0.2*tdp+0.8*tdp*util/100*clock/smClockMaxMHz)
	d.powerLimit.v = tdp
	d.smClock.v = clock
	d.throttle.v = throttle
	d.xid.v = g.xid
	d.eccSBE.v = g.eccSBE
	d.eccDBE.v = g.eccDBE
	d.pcieRX.v = 2e6 + 4e8*util/100
	d.pcieTX.v = 1e6 + 1.5e8*util/100
	return slowdown
}
