import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { lintKeymap } from '@codemirror/lint';
import { EditorState } from '@codemirror/state';
import { EditorView, keymap, placeholder as placeholderExt } from '@codemirror/view';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { newCompleteStrategy, PromQLExtension } from '@prometheus-io/codemirror-promql';
import React, { useEffect, useRef } from 'react';

import { ResourcePrometheusClient } from '../promql/client';
import { withQuotedNames } from '../promql/completion';
import { templateAwareLinter } from '../promql/lint';

export interface PromQLEditorProps {
  value: string;
  onChange: (value: string) => void;
  /** Shift+Enter and blur run the query, as in Grafana's code editors. */
  onRunQuery?: () => void;
  client: ResourcePrometheusClient;
  placeholder?: string;
  'aria-label'?: string;
}

/** PromQL language support whose completion comes from our resources and quotes dotted names. */
export function promQLExtension(client: ResourcePrometheusClient) {
  return new PromQLExtension()
    .setComplete({
      completeStrategy: withQuotedNames(newCompleteStrategy({ remote: client }), (n) => client.kindOf(n)),
    })
    .activateCompletion(true)
    .setLinter(templateAwareLinter())
    .activateLinter(true);
}

/** A CodeMirror 6 PromQL editor. The document is owned by CodeMirror; `value` syncs it from outside. */
export function PromQLEditor(props: PromQLEditorProps) {
  const { value, client, placeholder } = props;
  const styles = useStyles2(getStyles);
  const theme = useTheme2();
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // Callbacks change on every render; the editor reads the latest ones through refs.
  const latest = useRef(props);
  useEffect(() => {
    latest.current = props;
  });

  useEffect(() => {
    if (!host.current) {
      return undefined;
    }
    const promql = promQLExtension(client);
    const run = () => {
      latest.current.onRunQuery?.();
      return true;
    };
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: latest.current.value,
        extensions: [
          history(),
          closeBrackets(),
          autocompletion({ activateOnTyping: true }),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          promql.asExtension(),
          placeholderExt(placeholder ?? ''),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ 'aria-label': props['aria-label'] ?? 'PromQL query' }),
          EditorView.theme(
            {
              '&': { backgroundColor: theme.components.input.background, color: theme.colors.text.primary },
              '.cm-content': {
                fontFamily: theme.typography.fontFamilyMonospace,
                caretColor: theme.colors.text.primary,
              },
              '.cm-tooltip': { backgroundColor: theme.colors.background.secondary },
            },
            { dark: theme.isDark }
          ),
          keymap.of([
            { key: 'Shift-Enter', run },
            ...closeBracketsKeymap,
            ...defaultKeymap,
            ...historyKeymap,
            ...completionKeymap,
            ...lintKeymap,
          ]),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) {
              latest.current.onChange(update.state.doc.toString());
            }
          }),
          EditorView.domEventHandlers({
            blur: () => {
              latest.current.onRunQuery?.();
            },
          }),
        ],
      }),
    });
    view.current = editor;
    return () => {
      editor.destroy();
      promql.destroy();
      view.current = null;
    };
    // The editor is rebuilt only when the data source (client) or theme changes.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [client, theme]);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div ref={host} className={styles.editor} data-testid="promql-editor" />;
}

const getStyles = (theme: GrafanaTheme2) => ({
  editor: css({
    flex: 1,
    minWidth: 0,
    border: `1px solid ${theme.components.input.borderColor}`,
    borderRadius: theme.shape.radius.default,
    '.cm-editor.cm-focused': { outline: 'none' },
    '.cm-scroller': { minHeight: theme.spacing(4) },
  }),
});
