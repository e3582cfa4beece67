import { Field, FieldSet, TextArea } from '@grafana/ui';
import React, { useState } from 'react';

import { PriceEntry } from '../types';

/** The table as the editor shows it: one "instance-type [region] USD-per-hour" per line. */
export function formatPriceTable(table?: PriceEntry[]): string {
  return (table ?? [])
    .map((p) => [p.instanceType, p.region, p.usdPerHour].filter((v) => v !== undefined && v !== '').join(' '))
    .join('\n');
}

/** The most an hour may cost; the backend refuses more (pkg/pricing maxPlausibleHourly). */
const MAX_USD_PER_HOUR = 10_000;

const LINE_FORMAT =
  'write "ml.g5.2xlarge 1.21" or "ml.g5.2xlarge us-east-1 1.21" (instance type, optional region, USD per hour)';

/** What is wrong with one line's words, or undefined when they are an entry. */
function lineProblem(words: string[]): string | undefined {
  if (words.length === 1) {
    return `no price after "${words[0]}"`;
  }
  if (words.length > 3) {
    return `${words.length} words`;
  }
  if (!/^ml\.[^.]+\.[^.]+$/.test(words[0])) {
    return `"${words[0]}" is not a SageMaker instance type`;
  }
  const usd = Number(words[words.length - 1]);
  if (!(usd > 0 && usd <= MAX_USD_PER_HOUR)) {
    return `"${words[words.length - 1]}" is not an hourly price in USD (above 0, at most ${MAX_USD_PER_HOUR})`;
  }
  return undefined;
}

/**
 * Reads the editor's lines into jsonData.priceTable entries, or the first bad line's problem.
 * The backend checks the entries again (pkg/models/prices.go) and names what it refuses.
 */
export function parsePriceTable(text: string): { table?: PriceEntry[]; error?: string } {
  const table: PriceEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const words = lines[i].trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) {
      continue;
    }
    const problem = lineProblem(words);
    if (problem) {
      return { error: `Line ${i + 1}: ${problem}; ${LINE_FORMAT}.` };
    }
    const usd = Number(words[words.length - 1]);
    table.push(
      words.length === 3
        ? { instanceType: words[0], region: words[1], usdPerHour: usd }
        : { instanceType: words[0], usdPerHour: usd }
    );
  }
  return { table: table.length > 0 ? table : undefined };
}

interface Props {
  value?: PriceEntry[];
  onChange: (table: PriceEntry[] | undefined) => void;
}

/** The price table of the cost panels: prices that override the AWS Price List. */
export function PriceTableSettings({ value, onChange }: Props) {
  const [text, setText] = useState(() => formatPriceTable(value));
  const [error, setError] = useState<string>();
  return (
    <FieldSet label="Instance prices">
      <Field
        label="Price table"
        htmlFor="priceTable"
        invalid={Boolean(error)}
        error={error}
        description="The cost panels price instances at their on-demand list price from the AWS Price List (pricing:GetProducts). Enter your own hourly prices here (Savings Plans, private pricing): one instance type per line, an optional region, and USD per hour. An entry for a region wins over one without."
      >
        <TextArea
          id="priceTable"
          rows={4}
          placeholder={'ml.g5.12xlarge 5.10\nml.g5.2xlarge eu-west-1 1.30'}
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          onBlur={() => {
            const parsed = parsePriceTable(text);
            setError(parsed.error);
            if (!parsed.error) {
              onChange(parsed.table);
            }
          }}
        />
      </Field>
    </FieldSet>
  );
}
