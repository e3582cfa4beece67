package main

import (
	"encoding/json"
	"net/http"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// accountCounts serves what the account's CloudWatch limits answered so far (admitted, 422
// throttled, 429 rejected, per query and discovery class), for browser tests that check a
// load stays within the account's limits: they read it before and after and compare.
func accountCounts(a *emulator.Account) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Account string                 `json:"account"`
			Counts  emulator.AccountCounts `json:"counts"`
		}{a.ID, a.Counts()})
	}
}
