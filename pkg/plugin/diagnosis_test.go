package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

func TestDiagnosisQueriesRunThroughTheClient(t *testing.T) {
	fake := &fakeUpstream{answer: answerByOp(map[string]string{
		"query":       `{"status":"success","data":{"resultType":"vector","result":[]}}`,
		"query_range": `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
	})}
	d := newTestDatasource(t, fake)
	q := dataQuery("D", `{"queryType":"diagnosis","endpoint":"chat"}`)
	q.QueryType = "diagnosis"
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["D"]
	if dr.Error != nil {
		t.Fatalf("diagnosis failed: %v", dr.Error)
	}
	if len(dr.Frames) != 1 || dr.Frames[0].RefID != "D" {
		t.Fatalf("want one findings frame for D, got %v", dr.Frames)
	}
	calls := fake.Calls()
	if len(calls) == 0 {
		t.Fatal("the rules sent no query through the datasource's client")
	}
	scoped := 0
	for _, c := range calls {
		if c.op != "query" && c.op != "query_range" {
			t.Errorf("diagnosis made a %s call", c.op)
		}
		if strings.Contains(c.expr, `"chat"`) {
			scoped++
		}
	}
	if scoped == 0 {
		t.Error("no query selected the endpoint in the query's scope")
	}
}

func TestDiagnosisErrorsAreRedactedAndDownstream(t *testing.T) {
	secret := testSettings("").DecryptedSecureJSONData["secretKey"]
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "denied for " + secret, Cause: promclient.CauseAccessDenied}
	}}
	d := newTestDatasource(t, fake)
	q := dataQuery("D", `{}`)
	q.QueryType = "diagnosis"
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	dr := resp.Responses["D"]
	if dr.Error == nil {
		t.Fatal("want an error when every rule's query is refused")
	}
	if strings.Contains(dr.Error.Error(), secret) {
		t.Errorf("error leaks the secret: %v", dr.Error)
	}
	if dr.ErrorSource != backend.ErrorSourceDownstream || dr.Status != 403 {
		t.Errorf("status %d source %q, want CloudWatch's 403, downstream (as on a panel)", dr.Status, dr.ErrorSource)
	}
	if !strings.Contains(dr.Error.Error(), "Missing permission") {
		t.Errorf("the 403 lacks the hint panels give: %v", dr.Error)
	}
}
