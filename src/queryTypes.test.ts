import { hasEventFormat, isDiagnosis, isHealthQuery, QUERY_TYPE_OPTIONS, queryTypeOf, runsPromQL } from './queryTypes';

describe('query types', () => {
  it.each([
    [undefined, 'promql', true, false],
    ['', 'promql', true, false],
    ['promql', 'promql', true, false],
    ['diagnosis', 'diagnosis', false, true],
    ['alarms', 'alarms', false, false],
    ['alarmHistory', 'alarmHistory', false, false],
    ['inventory', 'inventory', false, false],
    ['changes', 'changes', false, false],
    // Unknown (another datasource's, a newer version's): edited as PromQL, the backend says what is wrong.
    ['logs', 'promql', true, false],
  ])('%s reads as %s', (queryType, type, promql, diagnosis) => {
    const query = { queryType };
    expect(queryTypeOf(query)).toBe(type);
    expect(runsPromQL(query)).toBe(promql);
    expect(isDiagnosis(query)).toBe(diagnosis);
  });

  it('offers every type once, PromQL first', () => {
    expect(QUERY_TYPE_OPTIONS.map((o) => o.value)).toEqual([
      'promql',
      'diagnosis',
      'alarms',
      'alarmHistory',
      'inventory',
      'cost',
      'changes',
    ]);
    expect(QUERY_TYPE_OPTIONS.every((o) => o.label !== '')).toBe(true);
    expect(QUERY_TYPE_OPTIONS[0].description).toBeUndefined();
  });
});

describe('alarms and inventory query types', () => {
  it.each([
    ['alarms', true, false],
    ['alarmHistory', true, true],
    ['inventory', true, true],
    ['changes', true, true],
    ['cost', false, false],
    ['diagnosis', false, false],
    ['promql', false, false],
    [undefined, false, false],
  ])('%s: health query %s, table/annotations format %s', (queryType, health, events) => {
    expect(isHealthQuery({ queryType })).toBe(health);
    expect(hasEventFormat({ queryType })).toBe(events);
  });
});
