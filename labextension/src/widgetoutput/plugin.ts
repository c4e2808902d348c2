/**
 * The plugin of widget outputs that read without their kernel (`application/vnd.purra.widget+json`): it adds
 * their renderer (widgets.ts) to the application's rendermime, before ipywidgets' own.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { WIDGET_MIME } from '../mimetypes';
import { WidgetOutput } from './widgets';

/** Before ipywidgets' view, which @jupyter-widgets/jupyterlab-manager registers at -10 (lower ranks win). */
export const WIDGET_RANK = -20;

export const widgetOutputPlugin: JupyterFrontEndPlugin<void> = {
  id: 'purra-jupyter-renderers:widgets',
  description: 'Widget outputs of purra_jupyter: their static view whenever their kernel is gone.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (_: JupyterFrontEnd, rendermime: IRenderMimeRegistry): void => {
    rendermime.addFactory(
      {
        safe: true, // the static view goes through the sanitizer; the live widget only for trusted outputs
        mimeTypes: [WIDGET_MIME],
        defaultRank: WIDGET_RANK,
        createRenderer: options => new WidgetOutput(options, rendermime)
      },
      WIDGET_RANK
    );
  }
};
