import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { QueryEditorHelp } from './components/QueryEditorHelp';
import { SageDatasource } from './datasource';
import { SageOptions, SageQuery, SageSecureJsonData } from './types';

export const plugin = new DataSourcePlugin<SageDatasource, SageQuery, SageOptions, SageSecureJsonData>(SageDatasource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor)
  .setQueryEditorHelp(QueryEditorHelp);
