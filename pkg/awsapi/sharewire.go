package awsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	prices "github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

// The shared entries are JSON: these answers are small (alarms, endpoints, prices, not
// samples) and read at most once per keep per replica. They hold what the API types hold
// (names, ARNs, states, tags, prices) and never a credential, a signature or a header:
// an inventory's permission errors travel as their action, status, code and AWS' message.
const (
	wireVersion = 1
	// maxWireBytes bounds an entry both ways: a larger answer stays local, a larger entry
	// read is rejected before it is parsed.
	maxWireBytes = 8 << 20
)

// wire is how one kind of answer travels: its kind in the envelope, so an entry read under
// another kind's name is rejected, and its JSON form.
type wire[T any] struct {
	kind string
	to   func(T) (any, error)
	from func([]byte) (T, error)
}

// plain is the wire of a type whose JSON form carries all of it.
func plain[T any](kind string) wire[T] {
	return wire[T]{kind: kind, to: func(v T) (any, error) { return v, nil }, from: func(b []byte) (T, error) {
		var v T
		return v, strictJSON(b, &v)
	}}
}

var (
	wireAlarms       = plain[[]Alarm]("alarms")
	wireContributors = plain[[]Contributor]("contributors")
	wireHistory      = plain[[]Transition]("history")
	wireScaling      = plain[[]ScalableTarget]("scaling")
	wireChanges      = plain[ChangeList]("changes")
	wireInventory    = wire[Inventory]{kind: "inventory", to: inventoryToWire, from: inventoryFromWire}
	wirePrices       = wire[[]prices.Price]{kind: "prices", to: pricesToWire, from: pricesFromWire}
)

// envelope is an entry: the version, the kind, when the answer was fetched (its keep runs
// from then on every replica) and the answer.
type envelope struct {
	V    int             `json:"v"`
	Kind string          `json:"k"`
	At   int64           `json:"at"` // Unix nanoseconds
	Data json.RawMessage `json:"d"`
}

func encode[T any](w wire[T], v T, at time.Time) ([]byte, error) {
	data, err := w.to(v)
	if err != nil {
		return nil, err
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(envelope{V: wireVersion, Kind: w.kind, At: at.UnixNano(), Data: d})
	if err == nil && len(b) > maxWireBytes {
		err = fmt.Errorf("%d bytes, over %d", len(b), maxWireBytes)
	}
	return b, err
}

// decode reads an entry of w's kind; anything else is an error, never a panic.
func decode[T any](w wire[T], b []byte) (T, time.Time, error) {
	var zero T
	if len(b) > maxWireBytes {
		return zero, time.Time{}, fmt.Errorf("entry of %d bytes, over %d", len(b), maxWireBytes)
	}
	var e envelope
	if err := strictJSON(b, &e); err != nil {
		return zero, time.Time{}, err
	}
	switch {
	case e.V != wireVersion:
		return zero, time.Time{}, fmt.Errorf("entry version %d, want %d", e.V, wireVersion)
	case e.Kind != w.kind:
		return zero, time.Time{}, fmt.Errorf("entry of kind %q, want %q", e.Kind, w.kind)
	case e.At <= 0:
		return zero, time.Time{}, fmt.Errorf("entry fetched at %d", e.At)
	}
	v, err := w.from(e.Data)
	if err != nil {
		return zero, time.Time{}, err
	}
	return v, time.Unix(0, e.At).UTC(), nil
}

// strictJSON decodes exactly one JSON value with only into's fields: an entry written by a
// build whose types differ is rejected rather than read with fields missing.
func strictJSON(b []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the entry")
	}
	return nil
}

type inventoryWire struct {
	Region                 string
	Endpoints              []Endpoint
	ComponentsErr, TagsErr *permissionWire `json:",omitempty"`
}

// permissionWire is a *PermissionError as classify builds it, without the SDK's error
// (which holds the HTTP response) and without the request id.
type permissionWire struct {
	Action, Code, Message string
	Status                int
}

func inventoryToWire(inv Inventory) (any, error) {
	ce, err := permissionToWire(inv.ComponentsErr)
	if err != nil {
		return nil, err
	}
	te, err := permissionToWire(inv.TagsErr)
	if err != nil {
		return nil, err
	}
	return inventoryWire{Region: inv.Region, Endpoints: inv.Endpoints, ComponentsErr: ce, TagsErr: te}, nil
}

func inventoryFromWire(b []byte) (Inventory, error) {
	var w inventoryWire
	if err := strictJSON(b, &w); err != nil {
		return Inventory{}, err
	}
	ce, err := w.ComponentsErr.err()
	if err != nil {
		return Inventory{}, err
	}
	te, err := w.TagsErr.err()
	if err != nil {
		return Inventory{}, err
	}
	return Inventory{Region: w.Region, Endpoints: w.Endpoints, ComponentsErr: ce, TagsErr: te}, nil
}

// permissionToWire keeps what the plugin's notice says of err; an error of another shape
// makes the answer unshareable.
func permissionToWire(err error) (*permissionWire, error) {
	if err == nil {
		return nil, nil
	}
	var (
		p *PermissionError
		e *Error
	)
	if !errors.As(err, &p) || !errors.As(p.Err, &e) {
		return nil, fmt.Errorf("%T is not a permission error of an AWS answer", err)
	}
	return &permissionWire{Action: p.Action, Code: e.Code, Message: e.Message, Status: e.Status}, nil
}

// err is the error classify would have returned.
func (p *permissionWire) err() (error, error) {
	if p == nil {
		return nil, nil
	}
	if p.Action == "" {
		return nil, errors.New("a permission error without its action")
	}
	return backend.DownstreamError(&PermissionError{Action: p.Action, Err: &Error{Action: p.Action, Status: p.Status, Code: p.Code, Message: p.Message}}), nil
}

// priceWire is prices.Price with every field in JSON (Price's own tags leave out Source
// and Date, which the cost panels show as the price's origin); converting between them does not compile
// once Price gains a field.
type priceWire struct {
	Region, InstanceType string
	USDPerHour           float64
	Source               string
	Date                 time.Time
}

// pricesToWire and pricesFromWire keep a nil list nil: null, not [].
func pricesToWire(ps []prices.Price) (any, error) {
	var out []priceWire
	for _, p := range ps {
		out = append(out, priceWire(p))
	}
	return out, nil
}

func pricesFromWire(b []byte) ([]prices.Price, error) {
	var ws []priceWire
	if err := strictJSON(b, &ws); err != nil || ws == nil {
		return nil, err
	}
	out := make([]prices.Price, len(ws))
	for i, w := range ws {
		out[i] = prices.Price(w)
	}
	return out, nil
}
