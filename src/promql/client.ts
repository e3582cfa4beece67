import { TimeRange } from '@grafana/data';
import { PrometheusClient } from '@prometheus-io/codemirror-promql';
import { EqlRegex, EqlSingle, Neq, NeqRegex } from '@prometheus-io/lezer-promql';

import { LookupCache } from '../lookupCache';
import { ResourceClient } from '../resources';
import { LabelMatcher, MatchOp, selector } from './names';

/** The matcher shape codemirror-promql hands to the client (op is a lezer token id). */
export interface EditorMatcher {
  type: number;
  name: string;
  value: string;
}

const OPS = new Map<number, MatchOp>([
  [EqlSingle, '='],
  [Neq, '!='],
  [EqlRegex, '=~'],
  [NeqRegex, '!~'],
]);

/** Our matchers in the shape codemirror-promql passes, for callers outside the code editor. */
export function editorMatchers(matchers: LabelMatcher[]): EditorMatcher[] {
  const ids = new Map([...OPS].map(([id, op]) => [op, id]));
  return matchers.map((m) => ({ type: ids.get(m.op)!, name: m.name, value: m.value }));
}

function toMatchers(matchers: EditorMatcher[] | undefined): LabelMatcher[] {
  return (matchers ?? [])
    .filter((m) => m.name !== '__name__' && OPS.has(m.type))
    .map((m) => ({ name: m.name, op: OPS.get(m.type)!, value: m.value }));
}

export { CACHE_TTL_MS } from '../lookupCache';

export type NameKind = 'metric' | 'label';

/**
 * codemirror-promql's PrometheusClient backed by our resource routes instead of a direct HTTP
 * connection. Answers are cached briefly, and every name seen is remembered by kind so the
 * completion layer can quote dotted names correctly.
 */
export class ResourcePrometheusClient implements PrometheusClient {
  private readonly cache: LookupCache;
  private readonly kinds = new Map<string, NameKind>();
  private range?: TimeRange;

  constructor(
    private readonly resources: ResourceClient,
    now: () => number = Date.now
  ) {
    this.cache = new LookupCache(now);
  }

  /** The dashboard range discovery calls cover; the last hour when unset. */
  setRange(range: TimeRange | undefined) {
    this.range = range;
  }

  /** Whether a completion label came from the metric list or a label-name list. */
  kindOf(name: string): NameKind | undefined {
    return this.kinds.get(name);
  }

  private remember(names: string[], kind: NameKind): string[] {
    for (const n of names) {
      // A name that is both (rare) keeps the first kind seen; metrics are fetched first.
      if (!this.kinds.has(n)) {
        this.kinds.set(n, kind);
      }
    }
    return names;
  }

  labelNames(metricName?: string): Promise<string[]> {
    const match = metricName ? [selector(metricName)] : [];
    return this.cache.get(`labels|${match.join()}`, () =>
      this.resources.labelNames(match, this.range).then((names) =>
        this.remember(
          names.filter((n) => n !== '__name__'),
          'label'
        )
      )
    );
  }

  labelValues(labelName: string, metricName?: string, matchers?: EditorMatcher[]): Promise<string[]> {
    // The matcher being typed (same label, value still partial) must not filter its own values.
    const rest = toMatchers(matchers).filter((m) => m.name !== labelName);
    const match = metricName || rest.length ? [selector(metricName, rest)] : [];
    return this.cache.get(`values|${labelName}|${match.join()}`, () =>
      this.resources.labelValues(labelName, match, this.range)
    );
  }

  // CloudWatch has no metadata endpoint; completion works without HELP/TYPE.
  metricMetadata(): Promise<Record<string, Array<{ type: string; help: string }>>> {
    return Promise.resolve({});
  }

  series(metricName: string, matchers?: EditorMatcher[], labelName?: string): Promise<Array<Map<string, string>>> {
    const match = [selector(metricName, toMatchers(matchers))];
    return this.cache.get(`series|${match.join()}|${labelName ?? ''}`, () =>
      this.resources.series(match, this.range).then((sets) => sets.map((s) => new Map(Object.entries(s))))
    );
  }

  metricNames(): Promise<string[]> {
    return this.cache.get('metrics', () =>
      this.resources.metricNames([], this.range).then((names) => this.remember(names, 'metric'))
    );
  }

  flags(): Promise<Record<string, string>> {
    return Promise.resolve({});
  }
}
