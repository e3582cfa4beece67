import { Button, Stack, Text } from '@grafana/ui';
import React from 'react';

import { EXAMPLES } from '../examples';

interface Props {
  /** Called with the starter's query; the editor puts it in and runs it. */
  onPick: (expr: string) => void;
}

/**
 * "Kick start your query": the starter queries, offered while the query is empty. Each is
 * right for CloudWatch (see pkg/starters). Test id: starter-queries; buttons are named by title.
 */
export function StarterQueries({ onPick }: Props) {
  return (
    <Stack direction="column" gap={0.5} data-testid="starter-queries">
      <Text color="secondary" variant="bodySmall">
        Kick start your query: pick one to run it.
      </Text>
      {EXAMPLES.map((ex) => (
        <Stack key={ex.title} direction="row" gap={1} alignItems="center">
          <Button size="sm" variant="secondary" fill="text" onClick={() => onPick(ex.expr)}>
            {ex.title}
          </Button>
          <Text color="secondary" variant="bodySmall">
            {ex.note}
          </Text>
        </Stack>
      ))}
    </Stack>
  );
}
