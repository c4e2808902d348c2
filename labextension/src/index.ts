/** The mime extension: our three widgets (widgets.ts), registered for the MIME types purra_jupyter emits. */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { CATALOG_MIME, ENVELOPE_MIME, RAW_RESULT_MIME } from './mimetypes';
import { RenderedCatalog, RenderedEnvelope, RenderedRawResult } from './widgets';

export { CATALOG_MIME, ENVELOPE_MIME, RAW_RESULT_MIME } from './mimetypes';

const extensions: IRenderMime.IExtension[] = [
  {
    id: 'purra-jupyter-renderers:envelope',
    rendererFactory: {
      safe: true,
      mimeTypes: [ENVELOPE_MIME],
      createRenderer: options => new RenderedEnvelope(options)
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:raw-result',
    rendererFactory: {
      safe: true,
      mimeTypes: [RAW_RESULT_MIME],
      createRenderer: options => new RenderedRawResult(options)
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:catalog',
    rendererFactory: {
      safe: true,
      mimeTypes: [CATALOG_MIME],
      createRenderer: options => new RenderedCatalog(options)
    },
    rank: 0,
    dataType: 'json'
  }
];

export default extensions;
