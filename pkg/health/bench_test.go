package health

import (
	"fmt"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
)

// BenchmarkJoin: a large region (200 endpoints × 5 ICs, 3000 alarms of which a third belong
// to other services, a third are PromQL) joined and framed, as one alarms query does; with
// ARNs (as AWS returns them, each parsed for its account) and without (the baseline).
func BenchmarkJoin(b *testing.B) {
	for _, withARNs := range []bool{false, true} {
		in := largeRegion(withARNs)
		b.Run(fmt.Sprintf("arns=%v", withARNs), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				states, _ := Join(in)
				_ = AlarmsFrame(states, withARNs)
			}
		})
	}
}

func largeRegion(withARNs bool) Input {
	arn := func(format string, args ...any) string {
		if !withARNs {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	in := Input{Region: "us-east-1"}
	for e := range 200 {
		ep := awsapi.Endpoint{Name: fmt.Sprintf("ep-%d", e), ARN: arn("arn:aws:sagemaker:us-east-1:111122223333:endpoint/ep-%d", e)}
		for c := range 5 {
			ep.Components = append(ep.Components, awsapi.Component{Name: fmt.Sprintf("ep-%d-ic-%d", e, c), Endpoint: ep.Name,
				ARN: arn("arn:aws:sagemaker:us-east-1:111122223333:inference-component/ep-%d-ic-%d", e, c)})
		}
		in.Inventory.Endpoints = append(in.Inventory.Endpoints, ep)
	}
	for a := range 3000 {
		al := awsapi.Alarm{Name: fmt.Sprintf("a-%d", a), State: awsapi.StateOK, ARN: arn("arn:aws:cloudwatch:us-east-1:111122223333:alarm:a-%d", a)}
		switch a % 3 {
		case 0:
			al.Dimensions = map[string]string{"EndpointName": fmt.Sprintf("ep-%d", a%200), "VariantName": "AllTraffic"}
		case 1:
			al.PromQL = fmt.Sprintf(`max({"vllm:kv_cache_usage_perc","aws.sagemaker.inference_component.name"="ep-%d-ic-%d"}) >= 0.9`, a%200, a%5)
		default:
			al.Dimensions = map[string]string{"QueueName": "q"}
		}
		in.Alarms = append(in.Alarms, al)
	}
	return in
}
