package awsauth

import (
	"fmt"
	"log/slog"
)

// secretMark is what every textual form of a non-empty Secret prints, and what a Redactor puts in place of a secret.
const secretMark = "[redacted]"

// Secret holds one decrypted secureJsonData value. Every way Go has of turning a value
// into text (fmt verbs, JSON, text encoders, slog) prints a placeholder instead, so a
// Settings value can be logged or wrapped into an error without leaking credentials.
// Reveal is the only way to read it, which keeps the uses easy to audit.
type Secret string

// Reveal returns the secret itself; call it only where the value is handed to AWS.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a value was provided.
func (s Secret) IsSet() bool { return s != "" }

func (s Secret) mask() string {
	if s == "" {
		return ""
	}
	return secretMark
}

// String implements fmt.Stringer.
func (s Secret) String() string { return s.mask() }

// Format implements fmt.Formatter so that every verb, including %d and %#v on a struct
// that holds the secret, prints the placeholder rather than the raw string.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.mask())) }

// MarshalText covers encoding/json, yaml and every other text-based encoder.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.mask()), nil }

// LogValue keeps structured loggers from printing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.mask()) }

// Set lets a command-line flag fill a Secret (flag.Value).
func (s *Secret) Set(v string) error {
	*s = Secret(v)
	return nil
}
