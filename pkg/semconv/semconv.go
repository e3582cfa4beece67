// Package semconv is the one table of metric and label names that the simulator, the
// dashboards, the diagnosis rules and the editor hints share. The names follow
// ../shared/docs/metrics-catalog.md; where that document marks a name as unverified ([I] or
// [?]) the choice made here is the project's default, kept in this file alone so that a real
// account that shows otherwise costs one edit.
package semconv

// Label names written by SageMaker detailed observability (datapoint attributes, no prefix).
const (
	LabelEndpoint         = "aws.sagemaker.endpoint.name"
	LabelVariant          = "aws.sagemaker.variant.name"
	LabelInferenceComp    = "aws.sagemaker.inference_component.name"
	LabelContainerID      = "aws.sagemaker.container.id"
	LabelContainerName    = "aws.sagemaker.container.name"
	LabelFramework        = "aws.sagemaker.inference_framework"
	LabelScalingDirection = "aws.sagemaker.scaling.direction"
	LabelOperationType    = "aws.sagemaker.operation.type"
	// Unverified [I]: the catalog (§4.6) proposes these two for ICE and lifecycle events.
	LabelEventInstanceType = "aws.sagemaker.instance_type"
	LabelEventAZ           = "aws.sagemaker.availability_zone"
)

// Resource and system labels (OTel resource attributes and CloudWatch system labels).
const (
	LabelHostID      = "@resource.host.id"
	LabelHostType    = "@resource.host.type"
	LabelAZ          = "@resource.cloud.availability_zone"
	LabelResourceID  = "@resource.cloud.resource_id"
	LabelAccount     = "@aws.account"
	LabelRegion      = "@aws.region"
	LabelScopeName   = "@instrumentation.@name"
	LabelType        = "__type__"
	LabelTemporality = "__temporality__"
	// LabelTagPrefix starts the label CloudWatch gives each resource tag on enriched vended
	// metrics: "@aws.tag.<Key>".
	LabelTagPrefix = "@aws.tag."
)

// Values of LabelFramework.
const (
	FrameworkVLLM   = "vllm"
	FrameworkSGLang = "sglang"
	FrameworkDJL    = "djl"
)

// Values of LabelScalingDirection.
const (
	ScaleOut = "ScaleOut"
	ScaleIn  = "ScaleIn"
)

// EnrichmentSwitch names the account settings without which the vended metrics (Invocations,
// latencies, errors) are not published as OTel series (catalog §2).
const EnrichmentSwitch = `OTel enrichment of vended metrics (CloudWatch → Settings → "OTel metric enrichment", or aws cloudwatch start-otel-enrichment, ` +
	`with "Resource tags for telemetry": aws observabilityadmin start-telemetry-enrichment)`

// Scope name of enriched SageMaker vended metrics [I: catalog §3.5].
const ScopeSageMakerVended = "cloudwatch.aws/sagemaker"

// Dimension labels of enriched classic (vended) metrics: original CloudWatch dimension names.
const (
	DimEndpointName           = "EndpointName"
	DimVariantName            = "VariantName"
	DimInferenceComponentName = "InferenceComponentName"
	DimInstanceID             = "InstanceId"
	DimContainerID            = "ContainerId"
	DimAvailabilityZone       = "AvailabilityZone"
	DimInstanceType           = "InstanceType"
	DimRegion                 = "Region"
)

// Classic SageMaker metrics after OTel enrichment: delta temporality, so dashboards use
// sum_over_time, never rate. Latencies are microseconds.
const (
	Invocations                  = "Invocations"
	InvocationsByInstanceID      = "InvocationsByInstanceId"
	InvocationsForIC             = "InvocationsForIc"
	InvocationsForICByInstanceID = "InvocationsForIcByInstanceIdByContainerId"
	// Per-copy (IC, instance, container) and per-instance variants of errors and latencies,
	// which let panels follow the IC, instance and AZ filters.
	Invocation4XXErrorsForICByInstanceID = "Invocation4XXErrorsForIcByInstanceIdByContainerId"
	Invocation5XXErrorsForICByInstanceID = "Invocation5XXErrorsForIcByInstanceIdByContainerId"
	InvocationModelErrorsByInstance      = "InvocationModelErrorsByInstanceId"
	InvocationModelErrorsForICByInstance = "InvocationModelErrorsForIcByInstanceIdByContainerId"
	ModelLatencyByInstanceID             = "ModelLatencyByInstanceId"
	OverheadLatencyByInstanceID          = "OverheadLatencyByInstanceId"
	ModelLatencyForICByInstanceID        = "ModelLatencyForIcByInstanceIdByContainerId"
	OverheadLatencyForICByInstanceID     = "OverheadLatencyForIcByInstanceIdByContainerId"
	FirstChunkModelLatencyByAZ           = "FirstChunkModelLatencyByAzByInstanceType"
	FirstChunkOverheadLatencyByAZ        = "FirstChunkOverheadLatencyByAzByInstanceType"
	Invocation4XXErrors                  = "Invocation4XXErrors"
	Invocation5XXErrors                  = "Invocation5XXErrors"
	InvocationModelErrors                = "InvocationModelErrors"
	Invocation4XXErrorsByInstance        = "Invocation4XXErrorsByInstanceId"
	Invocation5XXErrorsByInstance        = "Invocation5XXErrorsByInstanceId"
	Invocation4XXErrorsForIC             = "Invocation4XXErrorsForIc"
	Invocation5XXErrorsForIC             = "Invocation5XXErrorsForIc"
	ModelLatency                         = "ModelLatency"
	OverheadLatency                      = "OverheadLatency"
	FirstChunkModelLatency               = "FirstChunkModelLatency"
	FirstChunkOverheadLatency            = "FirstChunkOverheadLatency"
	ConcurrentRequestsPerCopy            = "ConcurrentRequestsPerCopy"
	MidStreamErrors                      = "MidStreamErrors"
)

// vLLM engine metrics (colon form, as scraped).
const (
	VLLMRunning          = "vllm:num_requests_running"
	VLLMWaiting          = "vllm:num_requests_waiting"
	VLLMKVCacheUsage     = "vllm:kv_cache_usage_perc" // ratio 0-1
	VLLMPromptTokens     = "vllm:prompt_tokens_total" // #nosec G101 -- a metric of LLM tokens, not a credential
	VLLMGenerationTokens = "vllm:generation_tokens_total"
	VLLMPreemptions      = "vllm:num_preemptions_total"
	VLLMRequestSuccess   = "vllm:request_success_total"
	VLLMTTFT             = "vllm:time_to_first_token_seconds"
	VLLMITL              = "vllm:inter_token_latency_seconds"
	VLLME2E              = "vllm:e2e_request_latency_seconds"
	VLLMQueueTime        = "vllm:request_queue_time_seconds"
	VLLMPrefixQueries    = "vllm:prefix_cache_queries_total" // tokens looked up in the prefix cache
	VLLMPrefixHits       = "vllm:prefix_cache_hits_total"    // tokens found there
)

// SGLang engine metrics.
const (
	SGLangRunning          = "sglang:num_running_reqs"
	SGLangQueued           = "sglang:num_queue_reqs"
	SGLangTokenUsage       = "sglang:token_usage" // #nosec G101 -- a metric of KV-cache tokens (ratio 0-1), not a credential
	SGLangPromptTokens     = "sglang:prompt_tokens_total"
	SGLangGenerationTokens = "sglang:generation_tokens_total"
	SGLangRetracted        = "sglang:num_retracted_reqs"
	SGLangTTFT             = "sglang:time_to_first_token_seconds"
	SGLangITL              = "sglang:inter_token_latency_seconds"
	SGLangE2E              = "sglang:e2e_request_latency_seconds"
	SGLangQueueTime        = "sglang:queue_time_seconds"
	SGLangCacheHitRate     = "sglang:cache_hit_rate" // prefix (radix) cache hit ratio 0-1
	SGLangAborted          = "sglang:num_aborted_requests_total"
)

// DJL Serving / LMI metrics (no TTFT/KV: panels show them empty, not zero).
const (
	DJLRequestLatency  = "RequestLatency" // µs
	DJLResponse2XX     = "Response_2XX_total"
	DJLResponse5XX     = "Response_5XX_total"
	DJLTokenThroughput = "TokenThroughput"
)

// DCGM exporter GPU metrics (per GPU). FB_* in MiB.
const (
	DCGMGPUUtil     = "DCGM_FI_DEV_GPU_UTIL"
	DCGMMemCopyUtil = "DCGM_FI_DEV_MEM_COPY_UTIL"
	DCGMGPUTemp     = "DCGM_FI_DEV_GPU_TEMP"
	DCGMMemoryTemp  = "DCGM_FI_DEV_MEMORY_TEMP"
	DCGMFBUsed      = "DCGM_FI_DEV_FB_USED"
	DCGMFBFree      = "DCGM_FI_DEV_FB_FREE"
	DCGMSMActive    = "DCGM_FI_DEV_SM_ACTIVE"
	DCGMPowerUsage  = "DCGM_FI_DEV_POWER_USAGE"
	DCGMXIDErrors   = "DCGM_FI_DEV_XID_ERRORS" // value = the last XID code, 0 = none
)

// DCGM fields beyond the seven AWS documents (catalog §4.1: exporter defaults or DCGM fields
// whether SageMaker forwards them is [?]); the GPU health row shows them where present.
const (
	DCGMPowerLimit      = "DCGM_FI_DEV_POWER_MGMT_LIMIT"       // W
	DCGMSMClock         = "DCGM_FI_DEV_SM_CLOCK"               // MHz
	DCGMThrottleReasons = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" // bit mask, ThrottleThermal etc.
	DCGMECCSBEVolatile  = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"      // single-bit (corrected) errors since driver load
	DCGMECCDBEVolatile  = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"      // double-bit (uncorrectable) errors since driver load
	DCGMSMOccupancy     = "DCGM_FI_PROF_SM_OCCUPANCY"          // ratio 0-1
	DCGMPCIeTXBytes     = "DCGM_FI_PROF_PCIE_TX_BYTES"         // B/s
	DCGMPCIeRXBytes     = "DCGM_FI_PROF_PCIE_RX_BYTES"         // B/s
	DCGMNVLinkBandwidth = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" // counter; GPUs without NVLink do not export it
)

// Bits of DCGMThrottleReasons that mean heat or power, not idleness.
const (
	ThrottleSWPowerCap   = 0x4
	ThrottleHWSlowdown   = 0x8
	ThrottleSWThermal    = 0x20
	ThrottleHWThermal    = 0x40
	ThrottleHWPowerBrake = 0x80
)

// Node exporter host metrics (per instance).
const (
	NodeCPUSeconds        = "node_cpu_seconds_total"
	NodeMemTotal          = "node_memory_MemTotal_bytes"
	NodeMemAvailable      = "node_memory_MemAvailable_bytes"
	NodeFilesystemSize    = "node_filesystem_size_bytes"
	NodeFilesystemAvail   = "node_filesystem_avail_bytes"
	NodeDiskIOTimeSeconds = "node_disk_io_time_seconds_total"
)

// Node exporter label and value the CPU-busy formula needs (100·(1 − idle rate)).
const (
	LabelCPUMode = "mode"
	CPUModeIdle  = "idle"
)

// Control-plane, event-driven metrics (catalog §4.6). Events are sparse samples at event
// time; read them with *_over_time over a wide window.
const (
	ScalingE2EDuration  = "e2e_duration"         // s; LabelScalingDirection, LabelOperationType
	ICECount            = "ice_count"            // LabelEventInstanceType, LabelEventAZ
	ModelDownloadTime   = "model_download_time"  // s
	GPULoadTime         = "gpu_load_time"        // s
	ContainerStartTime  = "container_start_time" // s
	ColdStartDuration   = "cold_start_duration"  // s, creation to first invocation [I]
	RebalancingDuration = "rebalancing_duration" // s
	ICCopyMoved         = "ic_copy_moved"
	InstancesReleased   = "instances_released"
)

// Values of LabelType and LabelTemporality.
const (
	TypeGauge         = "gauge"
	TypeCounter       = "counter"
	TypeHistogram     = "histogram"
	TemporalityDelta  = "delta"
	OperationUpdateIC = "UpdateInferenceComponent" // LabelOperationType of IC copy scaling [I]
)

// Vended-metric granularity variants (catalog §3.5, S6) used by AZ and per-IC panels.
const (
	InvocationsByAzByInstanceType = "InvocationsByAzByInstanceType"
	ModelLatencyForIC             = "ModelLatencyForIc"
	OverheadLatencyForIC          = "OverheadLatencyForIc"
)

// The remaining variants of the mapping (catalog §3.5): no panel reads them, but a user may
// pick them in the builder, which must know them as delta.
const (
	InvocationsForICByAZ               = "InvocationsForIcByAzByInstanceType"
	Invocation4XXErrorsByAZ            = "Invocation4XXErrorsByAzByInstanceType"
	Invocation4XXErrorsForICByAZ       = "Invocation4XXErrorsForIcByAzByInstanceType"
	Invocation5XXErrorsByAZ            = "Invocation5XXErrorsByAzByInstanceType"
	Invocation5XXErrorsForICByAZ       = "Invocation5XXErrorsForIcByAzByInstanceType"
	InvocationModelErrorsByAZ          = "InvocationModelErrorsByAzByInstanceType"
	InvocationModelErrorsForIC         = "InvocationModelErrorsForIc"
	InvocationModelErrorsForICByAZ     = "InvocationModelErrorsForIcByAzByInstanceType"
	InvocationsPerInstance             = "InvocationsPerInstance"
	InvocationsPerInstanceByInstanceID = "InvocationsPerInstanceByInstanceId"
	InvocationsPerInstanceByAZ         = "InvocationsPerInstanceByAzByInstanceType"
	InvocationsPerCopy                 = "InvocationsPerCopy"
	InvocationsPerCopyByAZ             = "InvocationsPerCopyByAzByInstanceType"
	ModelLatencyByAZ                   = "ModelLatencyByAzByInstanceType"
	ModelLatencyForICByAZ              = "ModelLatencyForIcByAzByInstanceType"
	OverheadLatencyByAZ                = "OverheadLatencyByAzByInstanceType"
	OverheadLatencyForICByAZ           = "OverheadLatencyForIcByAzByInstanceType"
	FirstChunkLatency                  = "FirstChunkLatency"
	FirstChunkLatencyByAZ              = "FirstChunkLatencyByAzByInstanceType"
	ConcurrentRequestsPerCopyByAZ      = "ConcurrentRequestsPerCopyByAzByInstanceType"
	ConcurrentRequestsPerModel         = "ConcurrentRequestsPerModel"
	ConcurrentRequestsPerModelByAZ     = "ConcurrentRequestsPerModelByAzByInstanceType"
)

// Engine, DCGM and node exporter labels that pass through the collector unchanged.
const (
	LabelModelName      = "model_name"
	LabelVLLMEngine     = "engine"
	LabelFinishedReason = "finished_reason"
	LabelSGLEngineType  = "engine_type"
	LabelSGLTPRank      = "tp_rank"
	LabelSGLPPRank      = "pp_rank"
	LabelSGLMoEEPRank   = "moe_ep_rank"
	LabelGPU            = "gpu"
	LabelGPUUUID        = "UUID"
	LabelGPUDevice      = "device"
	LabelGPUModelName   = "modelName"
	LabelGPUPCIBusID    = "pci_bus_id"
	LabelCPU            = "cpu"
	LabelDevice         = "device"
	LabelFSType         = "fstype"
	LabelMountpoint     = "mountpoint"
)

// vended is every classic SageMaker metric CloudWatch publishes with delta temporality once
// enriched, with all its per-instance, per-IC, per-copy and per-AZ variants: the catalog's
// vended family.
var vended = func() map[string]bool {
	m := map[string]bool{}
	for _, x := range catalog {
		if x.Family == FamilyVended {
			m[x.Name] = true
		}
	}
	return m
}()

// IsVended reports whether name is an enriched vended (delta) metric: rate, irate and
// increase go silently wrong on it; sum_over_time is the way.
func IsVended(name string) bool { return vended[name] }
