/** The front-end plugins: widget outputs that read without their kernel, and tools' own views. */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { appPlugin } from './apps';
import { widgetOutputPlugin } from './widgetoutput/plugin';

const plugins: JupyterFrontEndPlugin<void>[] = [widgetOutputPlugin, appPlugin];

export default plugins;
