// Package emulator is a local stand-in for Amazon CloudWatch's Prometheus-compatible
// query API (/api/v1/query, query_range, series, labels, label/<name>/values), so that
// the datasource, dashboards and diagnosis can run and be tested without an AWS account.
//
// Queries run on the real Prometheus engine over any storage.Queryable (the fleet
// simulator's TSDB), with Prometheus 3 UTF-8 names and native histograms. On top of the
// engine it enforces what CloudWatch adds: SigV4 on every request, every selector
// naming its metric, the documented limits with CloudWatch's status codes, and the
// "@datapoint." label aliases. README.md lists what is documented and what is inferred.
package emulator
