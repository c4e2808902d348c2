/** The front-end plugins: widget outputs that read without their kernel, and tools' own views (MCP Apps). */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { mcpAppsPlugin } from './mcpapps/plugin';
import { widgetOutputPlugin } from './widgetoutput/plugin';

const plugins: JupyterFrontEndPlugin<void>[] = [widgetOutputPlugin, mcpAppsPlugin];

export default plugins;
