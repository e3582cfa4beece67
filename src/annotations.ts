import { AnnotationEvent, AnnotationQuery, DataFrame, FieldType, renderLegendFormat } from '@grafana/data';

import { hasEventFormat } from './queryTypes';
import { SageQuery } from './types';

/** Options stored on the annotation itself, named as in Grafana's Prometheus annotations. */
export interface SageAnnotation extends AnnotationQuery<SageQuery> {
  expr?: string;
  /** Min step of the annotation query, e.g. "60s". */
  step?: string;
  /** Title template, e.g. "Scale out {{aws.sagemaker.endpoint.name}}". */
  titleFormat?: string;
  /** Text template shown under the title. */
  textFormat?: string;
  /** Comma-separated label names whose values become tags. */
  tagKeys?: string;
}

export const ANNOTATION_REFID = 'Anno';

/**
 * Gives the annotation a PromQL target: a range query (events need the time axis), built from
 * the Prometheus-style top-level fields when the annotation came from a Prometheus dashboard.
 */
export function prepareAnnotation(json: SageAnnotation): SageAnnotation {
  if (json.target && hasEventFormat(json.target)) {
    // Alarm transitions and inventory events: the backend frames the events itself.
    return { ...json, target: { ...json.target, refId: json.target.refId || ANNOTATION_REFID, format: 'annotations' } };
  }
  const target: SageQuery = {
    refId: ANNOTATION_REFID,
    ...(json.target ?? {}),
    expr: json.target?.expr ?? json.expr ?? '',
    interval: json.target?.interval || json.step || undefined,
    range: true,
    instant: false,
    format: 'time_series',
  };
  return { ...json, target };
}

function stepOf(times: number[], configured?: number): number {
  if (configured && configured > 0) {
    return configured;
  }
  let step = Infinity;
  for (let i = 1; i < times.length; i++) {
    step = Math.min(step, times[i] - times[i - 1]);
  }
  return Number.isFinite(step) ? step : 0;
}

/**
 * Every run of consecutive samples with a value above zero becomes one event (a region when it
 * spans more than one sample); gaps longer than one step split runs. Title, text and tags come
 * from the series labels through the annotation's templates.
 */
export function framesToEvents(frames: DataFrame[], anno: SageAnnotation): AnnotationEvent[] {
  if (anno.target && hasEventFormat(anno.target)) {
    return framedEvents(frames);
  }
  const events: AnnotationEvent[] = [];
  const tagKeys = (anno.tagKeys ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  for (const frame of frames) {
    const time = frame.fields.find((f) => f.type === FieldType.time);
    const value = frame.fields.find((f) => f.type === FieldType.number);
    if (!time || !value) {
      continue;
    }
    const labels = value.labels ?? {};
    const times: number[] = time.values;
    const step = stepOf(times, time.config.interval ?? undefined);
    const title = renderLegendFormat(anno.titleFormat || '{{__name__}}', labels) || value.name;
    const text = anno.textFormat ? renderLegendFormat(anno.textFormat, labels) : '';
    const tags = tagKeys.map((k) => labels[k]).filter((v): v is string => Boolean(v));
    let start: number | undefined;
    let last = 0;
    const flush = () => {
      if (start !== undefined) {
        events.push({ time: start, timeEnd: last, title, text, tags, isRegion: last > start });
        start = undefined;
      }
    };
    times.forEach((t, i) => {
      const v = value.values[i];
      const on = typeof v === 'number' && v > 0;
      if (on && start !== undefined && t - last > step) {
        flush();
      }
      if (on) {
        start = start ?? t;
        last = t;
      } else {
        flush();
      }
    });
    flush();
  }
  return events.sort((a, b) => (a.time ?? 0) - (b.time ?? 0));
}

/**
 * Events the backend framed (alarmHistory and inventory with format "annotations"): one per
 * row of time, title, text and tags (comma-separated).
 */
export function framedEvents(frames: DataFrame[]): AnnotationEvent[] {
  const events: AnnotationEvent[] = [];
  for (const frame of frames) {
    const field = (name: string) => frame.fields.find((f) => f.name === name);
    const time = field('time');
    if (!time) {
      continue;
    }
    const [title, text, tags] = [field('title'), field('text'), field('tags')];
    for (let i = 0; i < frame.length; i++) {
      const t = time.values[i];
      events.push({
        time: typeof t === 'number' ? t : new Date(t).valueOf(),
        title: title?.values[i] ?? '',
        text: text?.values[i] ?? '',
        tags: String(tags?.values[i] ?? '')
          .split(',')
          .map((tag) => tag.trim())
          .filter(Boolean),
      });
    }
  }
  return events.sort((a, b) => (a.time ?? 0) - (b.time ?? 0));
}
