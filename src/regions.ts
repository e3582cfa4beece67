/**
 * Region names as the backend reads them (pkg/awsauth): the query's `region` field, the
 * Allowed regions and the Endpoints per region settings. The editors check them here so a
 * mistyped region is flagged before anything is saved or run.
 */

/** The shape of an AWS region name; the same pattern as regionPattern in pkg/awsauth. */
const REGION_NAME = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/**
 * The regions where CloudWatch serves PromQL (docs/cloudwatch-promql.md §1), as
 * awsauth.PromQLRegions lists them (regions.test.ts compares the two). Offered in the
 * settings and used for "did you mean".
 */
export const PROMQL_REGIONS = [
  'af-south-1',
  'ap-east-1',
  'ap-east-2',
  'ap-northeast-1',
  'ap-northeast-2',
  'ap-northeast-3',
  'ap-south-1',
  'ap-south-2',
  'ap-southeast-1',
  'ap-southeast-2',
  'ap-southeast-3',
  'ap-southeast-4',
  'ap-southeast-5',
  'ap-southeast-6',
  'ap-southeast-7',
  'ca-central-1',
  'ca-west-1',
  'eu-central-1',
  'eu-central-2',
  'eu-north-1',
  'eu-south-1',
  'eu-south-2',
  'eu-west-1',
  'eu-west-2',
  'eu-west-3',
  'mx-central-1',
  'sa-east-1',
  'us-east-1',
  'us-east-2',
  'us-west-1',
  'us-west-2',
];

export function isRegionName(name: string): boolean {
  return REGION_NAME.test(name);
}

/** Whether a picker value is a template variable, resolved only when the query runs. */
export function isTemplate(value: string): boolean {
  return value.includes('$');
}

/**
 * The regions of a query's `region` value: split at ",", trimmed, empty items and duplicates
 * dropped, order kept. Grafana's glob form {a,b} is read as a,b, as the backend does.
 */
export function splitRegions(value: string | undefined): string[] {
  const text = (value ?? '').trim();
  const inner = text.startsWith('{') && text.endsWith('}') ? text.slice(1, -1) : text;
  const items = inner.split(',').map((r) => r.trim());
  return Array.from(new Set(items.filter(Boolean)));
}

/** Edit distance, for suggesting the region a typo was meant to be. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length];
}

/** The known region within two edits of name (case ignored), if any. */
export function closestRegion(name: string): string | undefined {
  const lower = name.toLowerCase();
  let best: { region: string; d: number } | undefined;
  for (const region of PROMQL_REGIONS) {
    const d = distance(lower, region);
    if (d <= 2 && (!best || d < best.d)) {
      best = { region, d };
    }
  }
  return best?.region;
}

/** Why a value is not a region name, with the fix; undefined when it is one. */
export function regionNameError(name: string): string | undefined {
  if (isRegionName(name)) {
    return undefined;
  }
  const suggestion = closestRegion(name);
  return `"${name}" is not an AWS region name (like us-east-1)${suggestion ? `; did you mean ${suggestion}?` : ''}`;
}

/**
 * The problems of a list of region values, one sentence each; template variables are checked
 * only when they run (allowVariables), as their values are not known here.
 */
export function regionErrors(values: string[], allowVariables: boolean): string[] {
  return values
    .filter((v) => !(allowVariables && isTemplate(v)))
    .map(regionNameError)
    .filter((e): e is string => e !== undefined);
}

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * Why an endpoint URL would be refused by the backend's endpoint rules (https, or plain
 * http only to a loopback host; a base URL without credentials, query or fragment).
 */
export function endpointURLError(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return `"${raw}" is not an absolute URL; use https://monitoring.<region>.amazonaws.com or your endpoint's base URL`;
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK_HOSTS.test(u.hostname))) {
    return `"${raw}" must use https (plain http only to 127.0.0.1, ::1 or localhost): requests are signed`;
  }
  if (u.username || u.password) {
    return `"${raw}" must not carry user credentials; use the AWS authentication settings`;
  }
  if (u.search || u.hash) {
    return `"${raw}" must not have a query or fragment; use the base URL only`;
  }
  return undefined;
}
