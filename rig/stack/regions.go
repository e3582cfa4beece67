package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Region is one region of a multi-region stack.
type Region struct {
	Name     string       // the region; "" takes the fleet's
	Fleet    *fleet.Fleet // nil: fleet.Default() moved to Name
	Scenario string       // "": MultiOptions.Scenario
}

// MultiOptions configure StartRegions. The embedded Options are shared by every region
// (history, step, end, live, keys, limits, accounts, faults, deny, the router's Addr); their Scenario
// is each region's default and region i plays Seed+i, so two regions with the same fleet
// still get their own instance ids and values. Options.Region and Options.Fleet must be
// empty: regions name their own.
type MultiOptions struct {
	Options
	Regions []Region
	// RegionListeners also serves each region on its own loopback port (its Stack.URL),
	// for the plugin's jsonData.regionEndpoints; such a port answers only requests signed
	// for its region.
	RegionListeners bool
}

// Multi is one process serving several regions: each its own TSDB, simulator, control plane
// and verifier, behind one router that answers a request as the region its SigV4 credential
// scope names.
type Multi struct {
	URL       string // the router, http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	End       time.Time // end of the first region's history (live regions may differ by a step)
	Step      time.Duration
	Regions   []*Stack // in the order asked

	byName   map[string]*Stack
	srv      *http.Server
	wg       sync.WaitGroup
	routed   atomic.Int64
	unrouted atomic.Int64
	once     sync.Once
}

// StartRegions builds every region (backfilled like Start) and serves them.
func StartRegions(ctx context.Context, opts MultiOptions) (*Multi, error) {
	base := opts.Options
	switch {
	case base.Region != "" || base.Fleet != nil:
		return nil, &OptionError{"region", "a multi-region stack takes its regions and fleets from Regions; leave Options.Region and Options.Fleet empty"}
	case len(opts.Regions) == 0:
		return nil, &OptionError{"region", "no regions; name at least one"}
	}
	// Shared defaults once, so that generated keys are the same for every region.
	if err := base.defaults(); err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(base.Addr) // defaults checked it
	m := &Multi{AccessKey: base.AccessKey, SecretKey: base.SecretKey, Step: base.Step, byName: map[string]*Stack{}}
	fail := func(err error) (*Multi, error) {
		m.Close()
		return nil, err
	}
	for i, r := range opts.Regions {
		o := base
		o.Seed = base.Seed + int64(i)
		o.Region, o.Fleet = regionOf(r)
		if r.Scenario != "" {
			o.Scenario = r.Scenario
		}
		if err := o.defaults(); err != nil {
			return fail(fmt.Errorf("region %s: %w", o.Region, err))
		}
		if !regionName(o.Region) {
			return fail(&OptionError{"region", fmt.Sprintf("%q is not an AWS region name (like us-east-1)", o.Region)})
		}
		if o.Fleet.Region != o.Region {
			return fail(&OptionError{"region", fmt.Sprintf("region %s was given a fleet of %s; move it with Fleet.InRegion or name the fleet's region", o.Region, o.Fleet.Region)})
		}
		if m.byName[o.Region] != nil {
			return fail(&OptionError{"region", fmt.Sprintf("region %s is named twice; give each region once", o.Region)})
		}
		st, err := build(ctx, o)
		if err != nil {
			return fail(fmt.Errorf("region %s: %w", o.Region, err))
		}
		m.Regions = append(m.Regions, st)
		m.byName[o.Region] = st
		if i == 0 {
			m.End = st.End
		}
		if opts.RegionListeners {
			if err := st.listen(net.JoinHostPort(host, "0")); err != nil {
				return fail(fmt.Errorf("region %s: %w", o.Region, err))
			}
		}
	}
	srv, url, err := serve(&m.wg, base.Addr, http.HandlerFunc(m.route))
	if err != nil {
		return fail(err)
	}
	m.srv, m.URL = srv, url
	return m, nil
}

// regionOf is the region and fleet r asks for.
func regionOf(r Region) (string, *fleet.Fleet) {
	switch {
	case r.Fleet == nil && r.Name == "":
		f := fleet.Default()
		return f.Region, f
	case r.Fleet == nil:
		return r.Name, fleet.Default().InRegion(r.Name, "")
	case r.Name == "":
		return r.Fleet.Region, r.Fleet
	}
	return r.Name, r.Fleet
}

// regionName is the shape of an AWS region name: lower-case words joined by "-" and a number
// at the end, such as us-east-1, us-gov-west-1, ap-southeast-4.
func regionName(s string) bool {
	parts := strings.Split(s, "-")
	if len(parts) < 3 {
		return false
	}
	for i, p := range parts {
		set := "abcdefghijklmnopqrstuvwxyz"
		if i == len(parts)-1 {
			set = "0123456789"
		}
		if p == "" || strings.Trim(p, set) != "" {
			return false
		}
	}
	return true
}

// route hands a request to the region its credential scope names. Any other request gets
// the error AWS gives for it (a missing or malformed signature, or a credential scoped to a
// region this endpoint does not serve), from a verifier that knows no keys, so no region's
// fleet or counters see it.
func (m *Multi) route(w http.ResponseWriter, r *http.Request) {
	region, service := scope(r)
	if st := m.byName[region]; st != nil {
		m.routed.Add(1)
		st.handler.ServeHTTP(w, r)
		return
	}
	m.unrouted.Add(1)
	err := (&sigv4verify.Verifier{Service: service}).Verify(r)
	var ae *sigv4verify.AuthError
	if !errors.As(err, &ae) {
		ae = &sigv4verify.AuthError{Status: http.StatusForbidden, Type: sigv4verify.TypeInvalidSignature, Message: sigv4verify.MsgWrongRegion}
	}
	// Control-plane calls get the error in their own protocol; any region's control plane
	// can word it, as routing and failing read no fleet.
	if cp := m.Regions[0].control; cp != nil {
		if c, ok := cp.Route(r); ok {
			writeResponse(w, cp.Fail(c, emulator.Failure{Kind: emulator.FailAuth, Status: ae.Status, Code: ae.Type, Message: ae.Message}))
			return
		}
	}
	w.Header().Set("x-amzn-RequestId", sigv4verify.NewRequestID())
	sigv4verify.WriteAuthError(w, ae)
}

// scope is the region and service of the request's SigV4 credential scope ("" when the
// Authorization header has none).
func scope(r *http.Request) (region, service string) {
	_, params, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	for part := range strings.SplitSeq(params, ",") {
		if cred, ok := strings.CutPrefix(strings.TrimSpace(part), "Credential="); ok {
			if s := strings.Split(cred, "/"); len(s) == 5 {
				return s[2], s[3]
			}
		}
	}
	return "", ""
}

func writeResponse(w http.ResponseWriter, resp emulator.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

// Region returns the stack of one region, or nil.
func (m *Multi) Region(name string) *Stack { return m.byName[name] }

// Routed counts the requests the router handed to a region (the rest of a region's Counts
// came to its own listener).
func (m *Multi) Routed() int64 { return m.routed.Load() }

// Unrouted counts the requests the router refused because they named no region it serves.
func (m *Multi) Unrouted() int64 { return m.unrouted.Load() }

// Received is every request any region or the router received.
func (m *Multi) Received() int64 {
	n := m.Unrouted()
	for _, st := range m.Regions {
		n += st.Counts().Received
	}
	return n
}

// Names are the served regions in order.
func (m *Multi) Names() []string {
	out := make([]string, len(m.Regions))
	for i, st := range m.Regions {
		out[i] = st.Region
	}
	return out
}

// DataSourceSettings are the settings of a data source over every region: static keys, the
// first region as default, the router as the one endpoint for all regions, allowedRegions,
// and regionEndpoints when the regions have their own listeners.
func (m *Multi) DataSourceSettings() (jsonData map[string]any, secureJSONData map[string]string) {
	jsonData = map[string]any{"authType": "keys", "defaultRegion": m.Regions[0].Region, "endpoint": m.URL,
		"allowedRegions": m.Names(), "timeInterval": fmt.Sprintf("%ds", int64(m.Step/time.Second))}
	eps := map[string]string{}
	for _, st := range m.Regions {
		if st.URL != "" {
			eps[st.Region] = st.URL
		}
	}
	if len(eps) > 0 {
		jsonData["regionEndpoints"] = eps
	}
	return jsonData, map[string]string{"accessKey": m.AccessKey, "secretKey": m.SecretKey}
}

// Close stops the router and every region. It returns the live simulators' errors.
func (m *Multi) Close() error {
	var errs []error
	m.once.Do(func() {
		if m.srv != nil {
			_ = m.srv.Close()
		}
		m.wg.Wait()
		for _, st := range slices.Backward(m.Regions) {
			errs = append(errs, st.Close())
		}
	})
	return errors.Join(errs...)
}
