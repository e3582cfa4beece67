package sharedstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// pki is a throwaway CA and a server certificate it signed for redis.test and 127.0.0.1,
// generated per test so no key material is committed.
type pki struct {
	caPEM             string
	certFile, keyFile string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "redis.test"}, DNSNames: []string{"redis.test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	p := pki{caPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		certFile: filepath.Join(dir, "server.crt"), keyFile: filepath.Join(dir, "server.key")}
	require.NoError(t, os.WriteFile(p.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600))
	require.NoError(t, os.WriteFile(p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return p
}

// TestTLS: a TLS server is reached with its CA (by address or by the certificate's name);
// without the CA, with a name the certificate lacks, or without TLS, the error says which
// setting to fix.
func TestTLS(t *testing.T) {
	p := newPKI(t)
	srv := storetest.StartTLS(t, p.certFile, p.keyFile)
	tests := []struct {
		name string
		set  func(*Settings)
		kind Kind
		want []string
	}{
		{name: "CA, address' IP", set: func(s *Settings) { s.TLS, s.TLSCACert = true, p.caPEM }},
		{name: "CA and the certificate's name", set: func(s *Settings) { s.TLS, s.TLSCACert, s.TLSServerName = true, p.caPEM, "redis.test" }},
		{name: "no CA", set: func(s *Settings) { s.TLS = true }, kind: TLS, want: []string{"certificate", SetTLSCACert}},
		{name: "a name the certificate lacks", set: func(s *Settings) { s.TLS, s.TLSCACert, s.TLSServerName = true, p.caPEM, "other.test" },
			kind: TLS, want: []string{"other.test", SetTLSServerName}},
		{name: "no TLS", set: func(s *Settings) {}, kind: Closed, want: []string{"turn on " + SetTLS}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, srv.Addr, tc.set)
			h, err := st.Health(context.Background())
			if tc.kind == "" {
				require.NoError(t, err)
				assert.Equal(t, "Redis", h.Server)
				require.NoError(t, st.Set(context.Background(), "test:k", []byte("v"), time.Minute))
				return
			}
			e := storeError(t, err)
			assert.Equal(t, tc.kind, e.Kind, e.Error())
			for _, w := range tc.want {
				assert.Contains(t, e.Error(), w)
			}
		})
	}
}
