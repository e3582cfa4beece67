import { render } from '@testing-library/react';
import React, { useState } from 'react';

import type { SageDatasource } from '../datasource';
import { SageQuery } from '../types';
import { AnnotationQueryEditor } from './AnnotationQueryEditor';
import { QueryEditor } from './QueryEditor';

/**
 * Renders a query editor as a panel holds it: every change becomes the query shown, and is
 * recorded for the test; onRunQuery is a mock.
 */
export function renderQueryEditor(
  datasource: SageDatasource,
  initial: SageQuery,
  Editor: typeof QueryEditor | typeof AnnotationQueryEditor = QueryEditor
) {
  const changes: SageQuery[] = [];
  const onRunQuery = jest.fn();
  function Harness() {
    const [query, setQuery] = useState(initial);
    return (
      <Editor
        datasource={datasource}
        query={query}
        onRunQuery={onRunQuery}
        onChange={(q: SageQuery) => {
          changes.push(q);
          setQuery(q);
        }}
      />
    );
  }
  render(<Harness />);
  return { changes, onRunQuery, last: () => changes[changes.length - 1] };
}
