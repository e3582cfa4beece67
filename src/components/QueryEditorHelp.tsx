import { QueryEditorHelpProps } from '@grafana/data';
import { Button, Stack, Text } from '@grafana/ui';
import React from 'react';

import { EXAMPLES } from '../examples';
import { SageQuery } from '../types';

/** The help panel: click an example to put it in the query. */
export function QueryEditorHelp({ onClickExample }: QueryEditorHelpProps<SageQuery>) {
  return (
    <Stack direction="column" gap={2}>
      <Text element="h3">SageMaker queries for CloudWatch PromQL</Text>
      <Text color="secondary">
        Quote dotted and @ labels (&quot;aws.sagemaker.endpoint.name&quot;), always name the metric, and use
        sum_over_time on classic metrics such as Invocations.
      </Text>
      {EXAMPLES.map((ex) => (
        <Stack key={ex.title} direction="column" gap={0.5}>
          <Text weight="medium">{ex.title}</Text>
          <code>{ex.expr}</code>
          <Stack direction="row" alignItems="center" gap={1}>
            <Text color="secondary" variant="bodySmall">
              {ex.note}
            </Text>
            <Button size="sm" variant="secondary" onClick={() => onClickExample({ refId: 'A', expr: ex.expr })}>
              Use query
            </Button>
          </Stack>
        </Stack>
      ))}
    </Stack>
  );
}
