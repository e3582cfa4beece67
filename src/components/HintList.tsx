import { Alert, Button, Stack } from '@grafana/ui';
import React from 'react';

import { Hint } from '../hints';

interface Props {
  hints: Hint[];
  /** Called with the corrected query when the user accepts a hint's fix. */
  onFix: (expr: string) => void;
}

/** CloudWatch pitfall hints under the editor; each disappears as soon as the query is fixed. */
export function HintList({ hints, onFix }: Props) {
  if (hints.length === 0) {
    return null;
  }
  return (
    <Stack direction="column" gap={0.5}>
      {hints.map((hint) => (
        <Alert key={hint.id} severity="warning" title="" data-testid={`hint-${hint.id}`}>
          <Stack direction="row" alignItems="center" justifyContent="space-between">
            <span>{hint.message}</span>
            {hint.fix !== undefined && (
              <Button size="sm" variant="secondary" onClick={() => onFix(hint.fix!)}>
                Fix query
              </Button>
            )}
          </Stack>
        </Alert>
      ))}
    </Stack>
  );
}
