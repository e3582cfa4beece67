package plugin

import (
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// TestEveryQueryTypeHasAHandler: models.QueryTypeOf accepts exactly models.QueryTypes, so
// route needs a handler for each of them and no other.
func TestEveryQueryTypeHasAHandler(t *testing.T) {
	for _, qt := range models.QueryTypes {
		if queryHandlers[qt] == nil {
			t.Errorf("query type %q has no handler", qt)
		}
	}
	if len(queryHandlers) != len(models.QueryTypes) {
		t.Errorf("%d handlers for %d query types", len(queryHandlers), len(models.QueryTypes))
	}
}
