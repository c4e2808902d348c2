/** The front-end plugins: widget outputs that read without their kernel, and tools' own views. */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { appPlugin } from './apps';
import { widgetPlugin } from './widgets';

const plugins: JupyterFrontEndPlugin<void>[] = [widgetPlugin, appPlugin];

export default plugins;
