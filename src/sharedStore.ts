import { SharedStoreOptions } from './types';

/** The backend's defaults for unset keys (pkg/sharedstore/settings.go). */
export const SHARED_STORE_DEFAULTS = {
  database: 0,
  keyPrefix: 'inferscope:',
  timeout: '50ms',
  accountShare: 80,
  fallbackShare: 25,
};

const MAX_DATABASE = 15;
const MAX_TIMEOUT_MS = 2000;
const MAX_KEY_PREFIX_BYTES = 64;

/** The fields an error can belong to. */
export type SharedStoreErrors = Partial<
  Record<
    | 'addresses'
    | 'database'
    | 'timeout'
    | 'keyPrefix'
    | 'accountShare'
    | 'fallbackShare'
    | 'tlsServerName'
    | 'tlsCACert',
    string
  >
>;

/** Whether a secret is set: typed now, or saved before and not reset. */
export interface SharedStoreSecrets {
  password: boolean;
  caCert: boolean;
  /** The CA certificate as typed; a saved one is never sent back, so only a typed one is checked. */
  typedCACert?: string;
}

/**
 * What pkg/sharedstore's ParseSettings would refuse, per field, worded as it is (the fix
 * included), so that the editor shows the backend's errors before a save.
 */
export function sharedStoreErrors(
  store: SharedStoreOptions | undefined,
  secrets: SharedStoreSecrets
): SharedStoreErrors {
  const s = store ?? {};
  const addresses = (s.addresses ?? []).map((a) => a.trim()).filter(Boolean);
  if (addresses.length === 0) {
    // As the backend: no address is no store, and nothing else of it is checked.
    return {};
  }
  const errors: SharedStoreErrors = {};
  const addressErrors = addresses.map(addressError).filter((e): e is string => e !== undefined);
  if (addressErrors.length) {
    errors.addresses = addressErrors.join('; ');
  }
  const db = s.database ?? SHARED_STORE_DEFAULTS.database;
  if (!Number.isInteger(db) || db < 0 || db > MAX_DATABASE) {
    errors.database = `${db} is out of range: use 0-${MAX_DATABASE} (0 when unsure)`;
  } else if ((s.cluster || addresses.length > 1) && db !== 0) {
    errors.database = `${db}, but a Redis Cluster has only database 0: set it to 0`;
  }
  if (s.timeout) {
    const ms = durationMs(s.timeout);
    if (ms === undefined) {
      errors.timeout = `"${s.timeout}" is not a duration: use one such as ${SHARED_STORE_DEFAULTS.timeout}`;
    } else if (ms <= 0 || ms > MAX_TIMEOUT_MS) {
      errors.timeout = `${s.timeout} is out of range: use 1ms-2s; the default, ${SHARED_STORE_DEFAULTS.timeout}, keeps a slow store from slowing panels`;
    }
  }
  if (s.keyPrefix !== undefined) {
    errors.keyPrefix = keyPrefixError(s.keyPrefix.trim());
  }
  for (const key of ['accountShare', 'fallbackShare'] as const) {
    const v = s[key];
    // 0 is the backend's "default", as an empty field is.
    if (v !== undefined && (!Number.isInteger(v) || v < 0 || v > 100)) {
      errors[key] = `${v} is not a percentage: use 1-100, or 0 for the default (${SHARED_STORE_DEFAULTS[key]})`;
    }
  }
  if (s.tlsServerName?.trim() && !s.tls) {
    errors.tlsServerName = 'Set, but TLS is off: turn TLS on, or clear the server name';
  }
  if (secrets.caCert && !s.tls) {
    errors.tlsCACert = 'Set, but TLS is off: turn TLS on, or clear the CA certificate';
  } else if (secrets.typedCACert?.trim() && !PEM_CERT.test(secrets.typedCACert)) {
    errors.tlsCACert =
      "Holds no PEM certificate: paste the CA's certificate, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----";
  }
  return Object.fromEntries(Object.entries(errors).filter(([, e]) => e !== undefined));
}

// Only the armour: the backend parses the certificate itself and names what it refuses.
const PEM_CERT = /-----BEGIN CERTIFICATE-----\s*[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----/;

/** As Go's net.SplitHostPort followed by the backend's host and port checks. */
function addressError(a: string): string | undefined {
  const notHostPort = `"${a}" is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)`;
  let host: string;
  let port: string;
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end < 0 || a[end + 1] !== ':') {
      return notHostPort;
    }
    host = a.slice(1, end);
    port = a.slice(end + 2);
  } else {
    const colon = a.lastIndexOf(':');
    if (colon < 0) {
      return notHostPort;
    }
    host = a.slice(0, colon);
    port = a.slice(colon + 1);
  }
  if (host === '' || /[[\]]/.test(host) || /[[\]]/.test(port) || (!a.startsWith('[') && host.includes(':'))) {
    return notHostPort;
  }
  const p = /^[+-]?\d+$/.test(port) ? Number(port) : NaN;
  if (!(p >= 1 && p <= 65535)) {
    return `"${a}" has no valid port: use 1-65535, usually 6379`;
  }
  return undefined;
}

function keyPrefixError(prefix: string): string | undefined {
  const example = `"${SHARED_STORE_DEFAULTS.keyPrefix}"`;
  if (prefix === '') {
    return `Empty: use a prefix such as ${example}, so the plugin's keys stay apart from other users of the store`;
  }
  const bytes = new TextEncoder().encode(prefix).length;
  if (bytes > MAX_KEY_PREFIX_BYTES) {
    return `${bytes} bytes long: use at most ${MAX_KEY_PREFIX_BYTES}`;
  }
  if (/[{} \t\r\n]/.test(prefix)) {
    // A brace would become the keys' cluster hash tag and put every key on one node.
    return `"${prefix}" contains a brace or a space: use letters, digits and ':' such as ${example}`;
  }
  return undefined;
}

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration (time.ParseDuration's syntax) in milliseconds, or undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  const m = /^([-+]?)(.*)$/.exec(text)!;
  if (m[2] === '0') {
    return 0;
  }
  const parts = [...m[2].matchAll(/(\d+\.?\d*|\.\d+)([a-zµμ]+)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== m[2]) {
    return undefined;
  }
  let ms = 0;
  for (const [, n, unit] of parts) {
    if (!(unit in UNIT_MS)) {
      return undefined;
    }
    ms += Number(n) * UNIT_MS[unit];
  }
  return m[1] === '-' ? -ms : ms;
}
