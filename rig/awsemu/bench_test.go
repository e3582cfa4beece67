package awsemu_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// BenchmarkDescribeAlarms compares the first call on a 6 h history, which evaluates every
// default alarm at each minute, with a call at the same TSDB head, which reuses that work.
// Compare the two in one run; absolute times depend on the machine.
func BenchmarkDescribeAlarms(b *testing.B) {
	ctx := context.Background()
	call := func(b *testing.B, cw *cloudwatch.Client) {
		if _, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil {
			b.Fatal(err)
		}
	}
	opts := stack.Options{Scenario: "kv-saturation", History: 6 * time.Hour, End: stack.PinnedEnd}
	b.Run("first-call", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			st, err := stack.Start(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			cw, _ := clients(st)
			b.StartTimer()
			call(b, cw)
			b.StopTimer()
			_ = st.Close()
		}
	})
	b.Run("same-head", func(b *testing.B) {
		st, err := stack.Start(ctx, opts)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		cw, _ := clients(st)
		call(b, cw)
		b.ResetTimer()
		for range b.N {
			call(b, cw)
		}
	})
}
