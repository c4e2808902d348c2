/**
 * The plugin of tools' own views (MCP Apps, `application/vnd.purra.app+json`): it adds their renderer (widgets.ts)
 * to the application's rendermime, before ipywidgets' view and our widget outputs. The front end registers no comm
 * target: each view output opens its own comm to the kernel's target (comm.ts).
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { APP_MIME } from '../mimetypes';
import { AppOutput } from './widgets';

/** Before ipywidgets' view and our widget outputs (widgetoutput/plugin.ts), so that the view is what draws this
 * output. */
export const APP_RANK = -30;

export const mcpAppsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'purra-jupyter-renderers:apps',
  description: "Tools' own views (MCP Apps) of purra_jupyter, sandboxed, their requests through the kernel.",
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (_: JupyterFrontEnd, rendermime: IRenderMimeRegistry): void => {
    rendermime.addFactory(
      {
        safe: true, // the server's HTML only ever runs in the sandbox; everything else is text
        mimeTypes: [APP_MIME],
        defaultRank: APP_RANK,
        createRenderer: options => new AppOutput(options, rendermime)
      },
      APP_RANK
    );
  }
};
