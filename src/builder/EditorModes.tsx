import { Button, RadioButtonGroup, Stack, Text } from '@grafana/ui';
import React, { useMemo, useState } from 'react';

import { HintList } from '../components/HintList';
import { MetricsBrowser } from '../components/MetricsBrowser';
import { PromQLEditor } from '../components/PromQLEditor';
import { StarterQueries } from '../components/StarterQueries';
import { getHints } from '../hints';
import { ResourcePrometheusClient } from '../promql/client';
import { EditorMode } from '../types';
import { parse } from './parse';
import { QueryBuilder } from './QueryBuilder';
import { render } from './render';

export interface PromQLEditorModesProps {
  expr: string;
  editorMode?: EditorMode;
  onChange: (patch: { expr?: string; editorMode?: EditorMode }) => void;
  onRunQuery: () => void;
  client: ResourcePrometheusClient;
}

const MODES = [
  { label: 'Builder', value: 'builder' as const, description: 'Pick a metric, filters and operations' },
  { label: 'Code', value: 'code' as const, description: 'Write PromQL' },
];

/**
 * The PromQL part of the query editor: Builder or Code (the default, and where a query stays
 * when the builder cannot represent it; the reason is shown as builder-refused). Code has the
 * metrics browser; an empty query gets the starter queries.
 */
export function PromQLEditorModes({ expr, editorMode, onChange, onRunQuery, client }: PromQLEditorModesProps) {
  const hints = useMemo(() => getHints(expr), [expr]);
  // The reason shown is for the text it was given; an edit clears it.
  const [refusal, setRefusal] = useState<{ expr: string; reason: string } | undefined>();
  const refused = refusal?.expr === expr ? refusal.reason : undefined;
  // A builder query that it cannot read (saved so, or replaced from outside: Explore's history,
  // the panel JSON) opens in Code with the reason; otherwise the builder would show, and on
  // its next edit write back, the query it had before. Text the builder wrote itself is not
  // judged: its edits pass through states it keeps to itself.
  const [written, setWritten] = useState<string | undefined>(undefined);
  const [judged, setJudged] = useState(() => ({ expr, ok: expr.trim() === '' || parse(expr).ok }));
  let builderOK = judged.ok;
  if (expr !== judged.expr) {
    const r = editorMode !== 'builder' || expr === written || expr.trim() === '' ? undefined : parse(expr);
    builderOK = !r || r.ok;
    setJudged({ expr, ok: builderOK });
    if (r && !r.ok) {
      setRefusal({ expr, reason: r.reason });
    }
  }
  const mode: EditorMode = editorMode === 'builder' && builderOK ? 'builder' : 'code';
  const [browsing, setBrowsing] = useState(false);
  // A starter or the browser's selector is PromQL text: it goes in, in Code, and runs.
  const putExpr = (v: string) => {
    onChange({ expr: v, editorMode: 'code' });
    onRunQuery();
  };

  const switchTo = (next: EditorMode) => {
    if (next === 'code' || expr.trim() === '') {
      setJudged({ expr, ok: true });
      onChange({ editorMode: next });
      return;
    }
    const r = parse(expr);
    if (!r.ok) {
      setRefusal({ expr, reason: r.reason });
      return;
    }
    setJudged({ expr, ok: true });
    // The builder writes its one spelling (see docs/query-editor.md).
    onChange({ editorMode: 'builder', expr: render(r.query) });
  };

  return (
    <Stack direction="column" gap={1}>
      <Stack direction="row" gap={1} alignItems="center">
        <RadioButtonGroup<EditorMode> size="sm" options={MODES} value={mode} onChange={switchTo} />
        {mode === 'code' && (
          <Button
            size="sm"
            variant="secondary"
            icon={browsing ? 'angle-down' : 'angle-right'}
            aria-expanded={browsing}
            onClick={() => setBrowsing(!browsing)}
          >
            Metrics browser
          </Button>
        )}
        {refused && (
          <span data-testid="builder-refused" role="status">
            <Text color="warning">Stays in Code: the builder cannot represent {refused}.</Text>
          </span>
        )}
      </Stack>
      {mode === 'builder' ? (
        <QueryBuilder
          expr={expr}
          client={client}
          onChange={(v) => {
            setWritten(v);
            onChange({ expr: v });
          }}
          onRunQuery={onRunQuery}
        />
      ) : (
        <>
          {browsing && (
            <MetricsBrowser
              client={client}
              onUse={(v) => {
                setBrowsing(false);
                putExpr(v);
              }}
            />
          )}
          <PromQLEditor
            value={expr}
            client={client}
            onChange={(v) => onChange({ expr: v })}
            onRunQuery={onRunQuery}
            placeholder='vllm:num_requests_running{"aws.sagemaker.endpoint.name"="my-endpoint"}'
          />
          <HintList hints={hints} onFix={(fixed) => onChange({ expr: fixed })} />
        </>
      )}
      {expr.trim() === '' && <StarterQueries onPick={putExpr} />}
    </Stack>
  );
}
