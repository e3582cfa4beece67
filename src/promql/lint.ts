import { ensureSyntaxTree } from '@codemirror/language';
import { Diagnostic } from '@codemirror/lint';
import { EditorState, Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { LanguageType, LintStrategy, PromQLExtension, promQLLanguage } from '@prometheus-io/codemirror-promql';

import { stringLiteralEnd } from './names';

const VARIABLE = /\$\{[^}]*\}|\$[A-Za-z_]\w*|\[\[[^\]]*\]\]/g;

/**
 * Grafana template variables ($__rate_interval, ${endpoint}, [[x]]) are not PromQL, so the
 * linter sees them replaced by same-length stand-ins (positions of real errors stay put): a
 * duration inside [...], an identifier elsewhere. Variables inside strings are left alone.
 */
export function maskTemplateVariables(expr: string): string {
  let out = '';
  let last = 0;
  let bracket = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    const end = stringLiteralEnd(expr, i);
    if (end !== i) {
      i = end;
    } else if (c === '[' && expr[i + 1] !== '[') {
      bracket++;
    } else if (c === ']' && bracket > 0) {
      bracket--;
    } else if (c === '$' || (c === '[' && expr[i + 1] === '[')) {
      VARIABLE.lastIndex = i;
      const m = VARIABLE.exec(expr);
      if (m && m.index === i) {
        const stand = bracket > 0 ? '1m' : 'v';
        out += expr.slice(last, i) + stand + (bracket > 0 ? ' ' : '_').repeat(Math.max(0, m[0].length - stand.length));
        last = i + m[0].length;
        i = last - 1;
      }
    }
  }
  return out + expr.slice(last);
}

const language = promQLLanguage(LanguageType.PromQL);

/**
 * A state for doc whose syntax tree covers the whole document. EditorState.create parses only
 * the first 3000 characters for at most 20 ms (an editor view parses the rest in the
 * background), and the linter and completion read only the tree the state holds, so a long
 * query, or a busy machine, would otherwise be judged on half a parse.
 */
export function parsedState(doc: string, extensions: Extension): EditorState {
  const state = EditorState.create({ doc, extensions });
  ensureSyntaxTree(state, state.doc.length, 1000);
  // ensureSyntaxTree advances the parse but not the tree the state shows; an empty
  // transaction hands the finished tree over.
  return state.update({}).state;
}

/** codemirror-promql's linter, run on the query with template variables masked. */
export function templateAwareLinter(): LintStrategy {
  const inner = new PromQLExtension().getLinter();
  return {
    promQL() {
      const lint = inner.promQL();
      return (view: EditorView): readonly Diagnostic[] | Promise<readonly Diagnostic[]> => {
        const doc = view.state.doc.toString();
        const masked = maskTemplateVariables(doc);
        if (masked === doc) {
          return lint(view);
        }
        return lint({ state: parsedState(masked, language) } as EditorView);
      };
    },
  };
}
