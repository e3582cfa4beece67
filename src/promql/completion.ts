import { Completion, CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { CompleteStrategy } from '@prometheus-io/codemirror-promql';

import { NameKind } from './client';
import { isLegacyLabelName, isLegacyMetricName, quoteString, stringLiteralEnd } from './names';

/** Whether pos sits inside an open {...} (string literals ignored). */
export function insideBraces(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const end = stringLiteralEnd(text, i);
    if (end !== i) {
      i = end;
    } else if (c === '{') {
      depth++;
    } else if (c === '}') {
      depth = Math.max(0, depth - 1);
    }
  }
  return depth > 0;
}

/**
 * The text a completion should insert for a name. Dotted and '@' names are quoted (they are
 * invalid bare), unless the user already opened a quote; a quoted metric name outside braces
 * needs its own braces: {"http.server.active_requests"}.
 */
export function insertionFor(name: string, kind: NameKind, textBefore: string): string | undefined {
  const legal = kind === 'metric' ? isLegacyMetricName(name) : isLegacyLabelName(name);
  const openQuote = /["']$/.test(textBefore);
  if (legal || openQuote) {
    return undefined;
  }
  if (kind === 'metric' && !insideBraces(textBefore)) {
    return `{${quoteString(name)}}`;
  }
  return quoteString(name);
}

/** Wraps codemirror-promql's completion so names it offers are inserted correctly quoted. */
export function withQuotedNames(
  inner: CompleteStrategy,
  kindOf: (name: string) => NameKind | undefined
): CompleteStrategy {
  return {
    async promQL(context: CompletionContext): Promise<CompletionResult | null> {
      const result = await inner.promQL(context);
      if (!result) {
        return null;
      }
      const before = context.state.sliceDoc(0, result.from);
      const options = result.options.map((option): Completion => {
        const kind = option.apply === undefined ? kindOf(option.label) : undefined;
        const apply = kind ? insertionFor(option.label, kind, before) : undefined;
        return apply ? { ...option, apply } : option;
      });
      // Dotted names are part of the word being completed, so keep the result valid across dots.
      return { ...result, options, validFor: undefined };
    },
    destroy() {
      inner.destroy?.();
    },
  };
}
