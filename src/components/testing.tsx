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

/**
 * Grafana's Combobox renders only the list rows that fit the height of its scroll box, and
 * jsdom lays out nothing (every box is 0 × 0): for the calling suite's tests, boxes are
 * 2000 × 400 px, so a list of up to ~70 options renders whole. Call it at the top of a test
 * file (or in a describe); other suites keep jsdom's sizes.
 */
export function withComboboxLayout() {
  const sizes = { clientHeight: 2000, clientWidth: 400 };
  const saved = new Map<string, PropertyDescriptor | undefined>();
  beforeAll(() => {
    for (const [key, px] of Object.entries(sizes)) {
      saved.set(key, Object.getOwnPropertyDescriptor(HTMLElement.prototype, key));
      Object.defineProperty(HTMLElement.prototype, key, { configurable: true, get: () => px });
    }
  });
  afterAll(() => {
    for (const [key, descriptor] of saved) {
      if (descriptor) {
        Object.defineProperty(HTMLElement.prototype, key, descriptor);
      } else {
        delete (HTMLElement.prototype as unknown as Record<string, unknown>)[key];
      }
    }
  });
}
