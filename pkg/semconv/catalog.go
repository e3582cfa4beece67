package semconv

import (
	"encoding/json"
	"slices"
)

//go:generate go run ../internal/frontendjson -o ../../src/semconv.json semconv

// Family groups metrics by who emits them; the query builder's metric picker shows one group
// per family, in this order.
type Family string

const (
	FamilyVended       Family = "vended"
	FamilyVLLM         Family = "vllm"
	FamilySGLang       Family = "sglang"
	FamilyDJL          Family = "djl"
	FamilyDCGM         Family = "dcgm"
	FamilyNode         Family = "node"
	FamilyControlPlane Family = "control_plane"
)

// FamilyInfo is a family with the title the editor shows and the labels its series may
// carry: ad-hoc filters and Explore's filter for/out add a matcher only to selectors of
// metrics whose family lists the label, since a matcher on a label a series lacks matches
// nothing (rig/simulator's tests hold every simulated series to these lists).
type FamilyInfo struct {
	ID     Family   `json:"id"`
	Title  string   `json:"title"`
	Labels []string `json:"labels"`
}

// Labels every series carries (CloudWatch's system labels and the type label).
var commonLabels = []string{LabelAccount, LabelRegion, LabelType}

// Labels of detailed-observability series: the endpoint's attributes and the host resource.
var deployedLabels = []string{
	LabelEndpoint, LabelVariant, LabelInferenceComp, LabelContainerID, LabelContainerName, LabelFramework,
	LabelHostID, LabelHostType, LabelAZ,
}

func labelsOf(groups ...[]string) []string {
	var out []string
	for _, g := range append([][]string{commonLabels}, groups...) {
		out = append(out, g...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Families in display order.
var Families = []FamilyInfo{
	{FamilyVended, "SageMaker vended", labelsOf([]string{
		LabelScopeName, LabelTemporality, LabelResourceID,
		DimEndpointName, DimVariantName, DimInferenceComponentName, DimInstanceID, DimContainerID,
		DimAvailabilityZone, DimInstanceType, DimRegion,
	})},
	{FamilyVLLM, "vLLM", labelsOf(deployedLabels, []string{LabelModelName, LabelVLLMEngine, LabelFinishedReason})},
	{FamilySGLang, "SGLang", labelsOf(deployedLabels, []string{LabelModelName, LabelSGLEngineType, LabelSGLTPRank, LabelSGLPPRank, LabelSGLMoEEPRank})},
	{FamilyDJL, "DJL Serving", labelsOf(deployedLabels, []string{LabelModelName})},
	{FamilyDCGM, "GPU (DCGM)", labelsOf(deployedLabels, []string{LabelGPU, LabelGPUUUID, LabelGPUDevice, LabelGPUModelName, LabelGPUPCIBusID})},
	{FamilyNode, "Host (node exporter)", labelsOf(deployedLabels, []string{LabelCPU, LabelCPUMode, LabelDevice, LabelFSType, LabelMountpoint})},
	{FamilyControlPlane, "Control plane events", labelsOf(deployedLabels, []string{
		LabelScalingDirection, LabelOperationType, LabelEventInstanceType, LabelEventAZ,
	})},
}

// Temporality of a counter or histogram: a delta sample is one interval's amount (sum it over
// time), a cumulative one a running total (rate/increase it). Gauges are cumulative here: no
// interval arithmetic applies to them.
const TemporalityCumulative = "cumulative"

// Metric is what the editor and the checks need to know about one metric name.
type Metric struct {
	Name        string `json:"name"`
	Family      Family `json:"family"`
	Type        string `json:"type"`        // TypeGauge, TypeCounter or TypeHistogram (native)
	Temporality string `json:"temporality"` // TemporalityDelta or TemporalityCumulative
	Unit        string `json:"unit"`        // as shown to a reader: µs, s, %, ratio, MiB, count, …
}

func m(name string, f Family, typ, unit string) Metric {
	t := TemporalityCumulative
	if f == FamilyVended {
		// Every enriched vended instrument is delta (catalog §3.5), whatever its type.
		t = TemporalityDelta
	}
	return Metric{Name: name, Family: f, Type: typ, Temporality: t, Unit: unit}
}

// catalog lists every metric name of this package. Units follow the metrics catalog (§3.5, §4).
var catalog = []Metric{
	m(Invocations, FamilyVended, TypeCounter, "count"),
	m(InvocationsByInstanceID, FamilyVended, TypeCounter, "count"),
	m(InvocationsForIC, FamilyVended, TypeCounter, "count"),
	m(InvocationsForICByInstanceID, FamilyVended, TypeCounter, "count"),
	m(InvocationsByAzByInstanceType, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrors, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrors, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrors, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrorsByInstance, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrorsByInstance, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrorsByInstance, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrorsForIC, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrorsForIC, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrorsForICByInstanceID, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrorsForICByInstanceID, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrorsForICByInstance, FamilyVended, TypeCounter, "count"),
	m(MidStreamErrors, FamilyVended, TypeCounter, "count"),
	m(ModelLatency, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatency, FamilyVended, TypeHistogram, "µs"),
	m(ModelLatencyByInstanceID, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatencyByInstanceID, FamilyVended, TypeHistogram, "µs"),
	m(ModelLatencyForIC, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatencyForIC, FamilyVended, TypeHistogram, "µs"),
	m(ModelLatencyForICByInstanceID, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatencyForICByInstanceID, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkModelLatency, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkOverheadLatency, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkModelLatencyByAZ, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkOverheadLatencyByAZ, FamilyVended, TypeHistogram, "µs"),
	// High-resolution count of in-flight requests per copy: a gauge, still delta once enriched.
	m(ConcurrentRequestsPerCopy, FamilyVended, TypeGauge, "count"),
	m(ConcurrentRequestsPerCopyByAZ, FamilyVended, TypeGauge, "count"),
	m(ConcurrentRequestsPerModel, FamilyVended, TypeGauge, "count"),
	m(ConcurrentRequestsPerModelByAZ, FamilyVended, TypeGauge, "count"),
	m(InvocationsForICByAZ, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrorsByAZ, FamilyVended, TypeCounter, "count"),
	m(Invocation4XXErrorsForICByAZ, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrorsByAZ, FamilyVended, TypeCounter, "count"),
	m(Invocation5XXErrorsForICByAZ, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrorsByAZ, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrorsForIC, FamilyVended, TypeCounter, "count"),
	m(InvocationModelErrorsForICByAZ, FamilyVended, TypeCounter, "count"),
	m(InvocationsPerInstance, FamilyVended, TypeCounter, "count"),
	m(InvocationsPerInstanceByInstanceID, FamilyVended, TypeCounter, "count"),
	m(InvocationsPerInstanceByAZ, FamilyVended, TypeCounter, "count"),
	m(InvocationsPerCopy, FamilyVended, TypeCounter, "count"),
	m(InvocationsPerCopyByAZ, FamilyVended, TypeCounter, "count"),
	m(ModelLatencyByAZ, FamilyVended, TypeHistogram, "µs"),
	m(ModelLatencyForICByAZ, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatencyByAZ, FamilyVended, TypeHistogram, "µs"),
	m(OverheadLatencyForICByAZ, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkLatency, FamilyVended, TypeHistogram, "µs"),
	m(FirstChunkLatencyByAZ, FamilyVended, TypeHistogram, "µs"),

	m(VLLMRunning, FamilyVLLM, TypeGauge, "requests"),
	m(VLLMWaiting, FamilyVLLM, TypeGauge, "requests"),
	m(VLLMKVCacheUsage, FamilyVLLM, TypeGauge, "ratio"),
	m(VLLMPromptTokens, FamilyVLLM, TypeCounter, "tokens"),
	m(VLLMGenerationTokens, FamilyVLLM, TypeCounter, "tokens"),
	m(VLLMPreemptions, FamilyVLLM, TypeCounter, "count"),
	m(VLLMRequestSuccess, FamilyVLLM, TypeCounter, "requests"),
	m(VLLMPrefixQueries, FamilyVLLM, TypeCounter, "tokens"),
	m(VLLMPrefixHits, FamilyVLLM, TypeCounter, "tokens"),
	m(VLLMTTFT, FamilyVLLM, TypeHistogram, "s"),
	m(VLLMITL, FamilyVLLM, TypeHistogram, "s"),
	m(VLLME2E, FamilyVLLM, TypeHistogram, "s"),
	m(VLLMQueueTime, FamilyVLLM, TypeHistogram, "s"),

	m(SGLangRunning, FamilySGLang, TypeGauge, "requests"),
	m(SGLangQueued, FamilySGLang, TypeGauge, "requests"),
	m(SGLangTokenUsage, FamilySGLang, TypeGauge, "ratio"),
	m(SGLangCacheHitRate, FamilySGLang, TypeGauge, "ratio"),
	m(SGLangRetracted, FamilySGLang, TypeGauge, "requests"),
	m(SGLangPromptTokens, FamilySGLang, TypeCounter, "tokens"),
	m(SGLangGenerationTokens, FamilySGLang, TypeCounter, "tokens"),
	m(SGLangAborted, FamilySGLang, TypeCounter, "requests"),
	m(SGLangTTFT, FamilySGLang, TypeHistogram, "s"),
	m(SGLangITL, FamilySGLang, TypeHistogram, "s"),
	m(SGLangE2E, FamilySGLang, TypeHistogram, "s"),
	m(SGLangQueueTime, FamilySGLang, TypeHistogram, "s"),

	m(DJLRequestLatency, FamilyDJL, TypeGauge, "µs"),
	m(DJLResponse2XX, FamilyDJL, TypeCounter, "count"),
	m(DJLResponse5XX, FamilyDJL, TypeCounter, "count"),
	m(DJLTokenThroughput, FamilyDJL, TypeGauge, "tokens/s"),

	m(DCGMGPUUtil, FamilyDCGM, TypeGauge, "%"),
	m(DCGMMemCopyUtil, FamilyDCGM, TypeGauge, "%"),
	m(DCGMGPUTemp, FamilyDCGM, TypeGauge, "°C"),
	m(DCGMMemoryTemp, FamilyDCGM, TypeGauge, "°C"),
	m(DCGMFBUsed, FamilyDCGM, TypeGauge, "MiB"),
	m(DCGMFBFree, FamilyDCGM, TypeGauge, "MiB"),
	m(DCGMSMActive, FamilyDCGM, TypeGauge, "ratio"),
	m(DCGMPowerUsage, FamilyDCGM, TypeGauge, "W"),
	m(DCGMXIDErrors, FamilyDCGM, TypeGauge, "XID code"),
	m(DCGMPowerLimit, FamilyDCGM, TypeGauge, "W"),
	m(DCGMSMClock, FamilyDCGM, TypeGauge, "MHz"),
	m(DCGMThrottleReasons, FamilyDCGM, TypeGauge, "bit mask"),
	m(DCGMECCSBEVolatile, FamilyDCGM, TypeCounter, "count"),
	m(DCGMECCDBEVolatile, FamilyDCGM, TypeCounter, "count"),
	m(DCGMSMOccupancy, FamilyDCGM, TypeGauge, "ratio"),
	m(DCGMPCIeTXBytes, FamilyDCGM, TypeGauge, "B/s"),
	m(DCGMPCIeRXBytes, FamilyDCGM, TypeGauge, "B/s"),
	m(DCGMNVLinkBandwidth, FamilyDCGM, TypeCounter, "count"),

	m(NodeCPUSeconds, FamilyNode, TypeCounter, "s"),
	m(NodeMemTotal, FamilyNode, TypeGauge, "bytes"),
	m(NodeMemAvailable, FamilyNode, TypeGauge, "bytes"),
	m(NodeFilesystemSize, FamilyNode, TypeGauge, "bytes"),
	m(NodeFilesystemAvail, FamilyNode, TypeGauge, "bytes"),
	m(NodeDiskIOTimeSeconds, FamilyNode, TypeCounter, "s"),

	m(ScalingE2EDuration, FamilyControlPlane, TypeGauge, "s"),
	m(ICECount, FamilyControlPlane, TypeGauge, "count"),
	m(ModelDownloadTime, FamilyControlPlane, TypeGauge, "s"),
	m(GPULoadTime, FamilyControlPlane, TypeGauge, "s"),
	m(ContainerStartTime, FamilyControlPlane, TypeGauge, "s"),
	m(ColdStartDuration, FamilyControlPlane, TypeGauge, "s"),
	m(RebalancingDuration, FamilyControlPlane, TypeGauge, "s"),
	m(ICCopyMoved, FamilyControlPlane, TypeGauge, "count"),
	m(InstancesReleased, FamilyControlPlane, TypeGauge, "count"),
}

// Catalog returns every metric this package names, with its family, type, temporality and unit.
func Catalog() []Metric { return slices.Clone(catalog) }

// Lookup returns the catalog entry of a metric name.
func Lookup(name string) (Metric, bool) {
	i := slices.IndexFunc(catalog, func(x Metric) bool { return x.Name == name })
	if i < 0 {
		return Metric{}, false
	}
	return catalog[i], true
}

// CatalogJSON is the catalog as the frontend reads it (src/semconv.json, written by go generate).
func CatalogJSON() ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		Families []FamilyInfo `json:"families"`
		Metrics  []Metric     `json:"metrics"`
	}{Families, catalog}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
