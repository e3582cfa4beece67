package awsapi

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	prices "github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

// fillAll sets every field of v, recursively, to a value other than its zero, so that a
// round trip dropping or mangling any field fails. Interface fields (the inventory's
// errors) are left to the caller.
func fillAll(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + strconv.Itoa(*n) + " \"é\x00")
	case reflect.Int, reflect.Int32, reflect.Int64: // time.Duration too
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(t, p.Elem(), n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillAll(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(t, k, n)
		fillAll(t, e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), int64(*n)).UTC()))
			return
		}
		for i := range v.NumField() {
			if !v.Field(i).CanSet() {
				t.Fatalf("%s.%s is unexported: the filler cannot set it", v.Type(), v.Type().Field(i).Name)
			}
			fillAll(t, v.Field(i), n)
		}
	case reflect.Interface:
	default:
		t.Fatalf("no filler for %s", v.Type())
	}
}

// full is a T with every field set.
func full[T any](t *testing.T) T {
	var v T
	n := 0
	fillAll(t, reflect.ValueOf(&v).Elem(), &n)
	return v
}

// permission is an inventory error as classify returns it, with what is not shared set too.
func permission(action, requestID string) error {
	return backend.DownstreamError(&PermissionError{Action: action, Err: &Error{Action: action, Status: 403, Code: "AccessDeniedException",
		Message: "User: arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: " + action, RequestID: requestID,
		Err: errors.New("operation error: Authorization: AWS4-HMAC-SHA256 Signature=abc")}})
}

func roundTrip[T any](t *testing.T, w wire[T], v, want T) {
	t.Helper()
	at := time.Date(2026, 12, 7, 5, 0, 0, 123, time.UTC)
	b, err := encode(w, v, at)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	got, gotAt, err := decode(w, b)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, want) || !gotAt.Equal(at) {
		t.Errorf("round trip changed the answer:\n got %+v at %v\nwant %+v at %v", got, gotAt, want, at)
	}
}

// TestWireRoundTripsEveryField: each kind comes back as it went, every field of it.
func TestWireRoundTripsEveryField(t *testing.T) {
	for name, test := range map[string]func(t *testing.T){
		"alarms":       func(t *testing.T) { v := full[[]Alarm](t); roundTrip(t, wireAlarms, v, v) },
		"contributors": func(t *testing.T) { v := full[[]Contributor](t); roundTrip(t, wireContributors, v, v) },
		"history":      func(t *testing.T) { v := full[[]Transition](t); roundTrip(t, wireHistory, v, v) },
		"scaling":      func(t *testing.T) { v := full[[]ScalableTarget](t); roundTrip(t, wireScaling, v, v) },
		"changes":      func(t *testing.T) { v := full[ChangeList](t); roundTrip(t, wireChanges, v, v) },
		"prices":       func(t *testing.T) { v := full[[]prices.Price](t); roundTrip(t, wirePrices, v, v) },
		"no prices":    func(t *testing.T) { roundTrip(t, wirePrices, nil, nil) },
		"inventory": func(t *testing.T) {
			v := full[Inventory](t)
			v.ComponentsErr, v.TagsErr = permission(ActionListInferenceComponents, ""), permission(ActionListTags, "")
			want := v
			// The SDK's error inside is not shared: what the notice reads is.
			want.ComponentsErr = backend.DownstreamError(&PermissionError{Action: ActionListInferenceComponents, Err: &Error{Action: ActionListInferenceComponents,
				Status: 403, Code: "AccessDeniedException", Message: "User: arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: " + ActionListInferenceComponents}})
			want.TagsErr = backend.DownstreamError(&PermissionError{Action: ActionListTags, Err: &Error{Action: ActionListTags,
				Status: 403, Code: "AccessDeniedException", Message: "User: arn:aws:sts::123456789012:assumed-role/r/s is not authorized to perform: " + ActionListTags}})
			roundTrip(t, wireInventory, v, want)
		},
		"inventory without errors": func(t *testing.T) { v := full[Inventory](t); roundTrip(t, wireInventory, v, v) },
	} {
		t.Run(name, test)
	}
}

// TestWireCarriesNoRequestOrSignature: an inventory's permission error is shared as its
// action, status, code and message; the request id and the SDK's error (which can quote the
// request) stay behind, and the plugin still reads it as a permission error.
func TestWireCarriesNoRequestOrSignature(t *testing.T) {
	inv := Inventory{Region: "us-east-1", ComponentsErr: permission(ActionListInferenceComponents, "req-7f3a")}
	b, err := encode(wireInventory, inv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"req-7f3a", "Signature", "AWS4-HMAC"} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("the entry holds %q:\n%s", leak, b)
		}
	}
	got, _, err := decode(wireInventory, b)
	if err != nil {
		t.Fatal(err)
	}
	var p *PermissionError
	if !errors.As(got.ComponentsErr, &p) || p.Action != ActionListInferenceComponents || !backend.IsDownstreamError(got.ComponentsErr) ||
		!strings.Contains(got.ComponentsErr.Error(), "not authorized to perform") {
		t.Errorf("the shared error reads %v", got.ComponentsErr)
	}
}

// TestWireLeavesUnshareableAnswersOut: answers the encoding cannot carry faithfully fail to
// encode (the cache then serves them unshared).
func TestWireLeavesUnshareableAnswersOut(t *testing.T) {
	for name, encodeErr := range map[string]error{
		"a permission error of another shape": func() error {
			_, err := encode(wireInventory, Inventory{TagsErr: &PermissionError{Action: ActionListTags, Err: errors.New("denied")}}, time.Now())
			return err
		}(),
		"an error that is no permission error": func() error {
			_, err := encode(wireInventory, Inventory{ComponentsErr: errors.New("boom")}, time.Now())
			return err
		}(),
		"a price that is not a number": func() error {
			_, err := encode(wirePrices, []prices.Price{{InstanceType: "ml.g5.xlarge", USDPerHour: math.NaN()}}, time.Now())
			return err
		}(),
		"an answer over the bound": func() error {
			_, err := encode(wireAlarms, []Alarm{{Description: strings.Repeat("x", maxWireBytes)}}, time.Now())
			return err
		}(),
	} {
		if encodeErr == nil {
			t.Errorf("%s was encoded", name)
		}
	}
}

// TestWireRejectsBadEntries: an entry that is not this version's, kind's or shape is an
// error, never a panic and never a partly read answer.
func TestWireRejectsBadEntries(t *testing.T) {
	good, err := encode(wireAlarms, []Alarm{{Name: "a", State: StateOK}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := encode(wirePrices, []prices.Price{{InstanceType: "ml.g5.xlarge", USDPerHour: 1}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, entry := range map[string]string{
		"empty":              "",
		"not JSON":           "\x00\x01garbage",
		"truncated":          string(good[:len(good)/2]),
		"another version":    strings.Replace(string(good), `"v":1`, `"v":2`, 1),
		"no version":         strings.Replace(string(good), `"v":1,`, ``, 1),
		"another kind":       string(other),
		"no fetch time":      strings.Replace(string(good), `"at":`, `"at":-`, 1),
		"an unknown field":   strings.Replace(string(good), `"Name":"a"`, `"Name":"a","Secret":"x"`, 1),
		"data after":         string(good) + `{}`,
		"wrong type":         strings.Replace(string(good), `"Name":"a"`, `"Name":7`, 1),
		"over the bound":     string(good) + strings.Repeat(" ", maxWireBytes),
		"a list, not object": `[1,2,3]`,
	} {
		t.Run(name, func(t *testing.T) {
			if v, _, err := decode(wireAlarms, []byte(entry)); err == nil {
				t.Errorf("decoded %+v", v)
			}
		})
	}
	inv, err := encode(wireInventory, Inventory{TagsErr: permission(ActionListTags, "")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	noAction := strings.Replace(string(inv), `"Action":"sagemaker:ListTags"`, `"Action":""`, 1)
	if v, _, err := decode(wireInventory, []byte(noAction)); err == nil {
		t.Errorf("a permission error without its action decoded: %+v", v)
	}
}

// FuzzWireDecode: no entry makes a decoder panic, and what one accepts encodes to an entry
// that decodes to the same answer.
func FuzzWireDecode(f *testing.F) {
	seed := func(b []byte, err error) {
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	at := time.Unix(1_800_000_000, 5)
	seed(encode(wireAlarms, []Alarm{{Name: "a", State: StateAlarm, Threshold: new(float64), Every: time.Minute, Dimensions: map[string]string{"EndpointName": "e"}}}, at))
	seed(encode(wireContributors, []Contributor{{ID: "c", Attributes: map[string]string{"ic": "x"}, Since: at}}, at))
	seed(encode(wireHistory, []Transition{{Alarm: "a", Time: at, From: StateOK, To: StateAlarm}}, at))
	seed(encode(wireScaling, []ScalableTarget{{ResourceID: "inference-component/x", Policies: []ScalingPolicy{{Metric: "m", Target: 4}}}}, at))
	seed(encode(wireChanges, ChangeList{Unreadable: 1}, at))
	seed(encode(wirePrices, []prices.Price{{Region: "us-east-1", InstanceType: "ml.g5.xlarge", USDPerHour: 1.4, Date: at}}, at))
	seed(encode(wireInventory, Inventory{Region: "us-east-1", Endpoints: []Endpoint{{Name: "e", Variants: []Variant{{Name: "v"}}}}, TagsErr: permission(ActionListTags, "")}, at))
	f.Add([]byte(`{"v":1,"k":"alarms","at":1,"d":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		stable(t, wireAlarms, b)
		stable(t, wireContributors, b)
		stable(t, wireHistory, b)
		stable(t, wireScaling, b)
		stable(t, wireChanges, b)
		stable(t, wirePrices, b)
		stable(t, wireInventory, b)
	})
}

func stable[T any](t *testing.T, w wire[T], b []byte) {
	v, at, err := decode(w, b)
	if err != nil {
		return
	}
	once, err := encode(w, v, at)
	if err != nil {
		return // a time JSON cannot write (a year past 9999 after its offset): served unshared
	}
	v2, at2, err := decode(w, once)
	if err != nil {
		t.Fatalf("%s: %q decoded, its encoding %q does not: %v", w.kind, b, once, err)
	}
	twice, err := encode(w, v2, at2)
	if err != nil || !bytes.Equal(once, twice) || !at2.Equal(at) {
		t.Fatalf("%s: %q decoded and encoded to %q, then to %q (%v)", w.kind, b, once, twice, err)
	}
}
