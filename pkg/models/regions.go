package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// maxRegionFieldBytes bounds a query's region field: every region there is, joined, fits.
const maxRegionFieldBytes = 2 << 10

// regionsJSON is the region part of jsonData.
type regionsJSON struct {
	AllowedRegions  json.RawMessage   `json:"allowedRegions"`
	RegionEndpoints map[string]string `json:"regionEndpoints"`
}

// loadRegions fills the region settings from jsonData: allowedRegions (an array, or one
// string joined by ","), and regionEndpoints, each entry checked by the endpoint rules.
func (s *Settings) loadRegions(jd regionsJSON) []error {
	var errs []error
	list, err := stringList(jd.AllowedRegions)
	if err != nil {
		errs = append(errs, fmt.Errorf("jsonData.allowedRegions must be a list of region names, such as [\"us-east-1\", \"us-west-2\"]"))
	}
	for _, r := range list {
		if err := awsauth.CheckRegionName(r, nil); err != nil {
			errs = append(errs, fmt.Errorf("jsonData.allowedRegions: %w; fix or remove it", err))
			continue
		}
		if !slices.Contains(s.AllowedRegions, r) {
			s.AllowedRegions = append(s.AllowedRegions, r)
		}
	}
	keys := make([]string, 0, len(jd.RegionEndpoints))
	for k := range jd.RegionEndpoints {
		keys = append(keys, k)
	}
	slices.Sort(keys) // errors in a stable order
	for _, k := range keys {
		region, raw := strings.TrimSpace(k), strings.TrimSpace(jd.RegionEndpoints[k])
		if region == "" && raw == "" {
			continue // a row the config editor added but left blank
		}
		if err := awsauth.CheckRegionName(region, nil); err != nil {
			errs = append(errs, fmt.Errorf("jsonData.regionEndpoints: key %w; fix or remove the entry", err))
			continue
		}
		if raw == "" {
			errs = append(errs, fmt.Errorf("%s is empty: enter the region's endpoint URL or remove the entry", awsauth.RegionEndpointSetting(region)))
			continue
		}
		if s.Auth.RegionEndpoints == nil {
			s.Auth.RegionEndpoints = map[string]string{}
		}
		s.Auth.RegionEndpoints[region] = raw
		if _, err := awsauth.ResolveRegionEndpoint(s.Auth, region); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// DefaultRegion is the region of queries that name none.
func (s *Settings) DefaultRegion() string { return awsauth.DefaultRegion(s.Auth) }

// Allowed is the regions queries may name, sorted: jsonData.allowedRegions and the default
// region when the list is set; else the default region, the PromQL regions of the default
// region's partition and the keys of jsonData.regionEndpoints.
func (s *Settings) Allowed() []string {
	def := s.DefaultRegion()
	out := slices.Clone(s.AllowedRegions)
	if len(out) == 0 {
		for _, r := range awsauth.PromQLRegions {
			if awsauth.Partition(r) == awsauth.Partition(def) {
				out = append(out, r)
			}
		}
		for r := range s.Auth.RegionEndpoints {
			out = append(out, r)
		}
	}
	if def != "" {
		out = append(out, def)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseRegions reads a query's region field: one region or several joined by "," (or
// Grafana's glob form {a,b}); items trimmed, empty ones and duplicates dropped, order kept.
// Empty means the default region (one item). Every item must be a region name the data
// source allows; otherwise the error (downstream) names the item and the fix, and nothing
// may be sent. refID "" leaves the "query X:" prefix out (resource calls).
func ParseRegions(refID, field string, s *Settings) ([]string, error) {
	regions, err := s.checkRegions(field)
	if err != nil {
		if refID != "" {
			err = fmt.Errorf("query %s: %w", refID, err)
		}
		return nil, backend.DownstreamError(err)
	}
	return regions, nil
}

func (s *Settings) checkRegions(field string) ([]string, error) {
	if err := CheckLen("region", field, maxRegionFieldBytes); err != nil {
		return nil, err
	}
	field = strings.TrimSpace(field)
	if strings.HasPrefix(field, "{") && strings.HasSuffix(field, "}") {
		field = field[1 : len(field)-1]
	}
	allowed := s.Allowed()
	var out []string
	for _, r := range strings.Split(field, ",") {
		r = strings.TrimSpace(r)
		if r == "" || slices.Contains(out, r) {
			continue
		}
		if err := awsauth.CheckRegionName(r, allowed); err != nil {
			return nil, err
		}
		if !slices.Contains(allowed, r) {
			msg := fmt.Sprintf("region %q is not allowed by this data source: add it to Allowed regions (jsonData.allowedRegions) or use one of: %s",
				r, strings.Join(allowed, ", "))
			if near := awsauth.ClosestOf(r, allowed); near != "" {
				msg += "; did you mean " + near + "?"
			}
			return nil, fmt.Errorf("%s", msg)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return []string{s.DefaultRegion()}, nil
	}
	return out, nil
}

// QueryRegion reads the region field of any query type's model: a string, or a list of
// strings (joined by ","). Absent is "".
func QueryRegion(dq backend.DataQuery) (string, error) { return Decode(dq).Region() }

// Region is the model's region field as written (QueryRegion).
func (m *Model) Region() (string, error) { return regionField(m.dq.RefID, m.raw.Region) }
