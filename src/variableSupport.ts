import { CustomVariableSupport, DataQueryRequest, DataQueryResponse } from '@grafana/data';
import { from, map, Observable } from 'rxjs';

import { VariableQueryEditor } from './components/VariableQueryEditor';
import type { SageDatasource } from './datasource';
import { toVariableQuery, VariableQuery } from './variables';

/** Query variables resolved by the datasource's metricFindQuery (resource calls only). */
export class SageVariableSupport extends CustomVariableSupport<SageDatasource, VariableQuery> {
  editor = VariableQueryEditor;

  constructor(private readonly datasource: SageDatasource) {
    super();
  }

  query(request: DataQueryRequest<VariableQuery>): Observable<DataQueryResponse> {
    const query = toVariableQuery(request.targets[0]);
    return from(this.datasource.metricFindQuery(query, { range: request.range, scopedVars: request.scopedVars })).pipe(
      map((data) => ({ data }))
    );
  }
}
