/** The mime extension: our three renderers, registered for the MIME types purra_jupyter emits. */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import {
  CATALOG_MIME,
  CatalogRenderer,
  ENVELOPE_MIME,
  EnvelopeRenderer,
  RAW_RESULT_MIME,
  RawResultRenderer
} from './renderers';

export { CATALOG_MIME, ENVELOPE_MIME, RAW_RESULT_MIME } from './renderers';

const extensions: IRenderMime.IExtension[] = [
  {
    id: 'purra-jupyter-renderers:envelope',
    rendererFactory: {
      safe: true,
      mimeTypes: [ENVELOPE_MIME],
      createRenderer: options => new EnvelopeRenderer(options)
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:raw-result',
    rendererFactory: {
      safe: true,
      mimeTypes: [RAW_RESULT_MIME],
      createRenderer: options => new RawResultRenderer(options)
    },
    rank: 0,
    dataType: 'json'
  },
  {
    id: 'purra-jupyter-renderers:catalog',
    rendererFactory: {
      safe: true,
      mimeTypes: [CATALOG_MIME],
      createRenderer: options => new CatalogRenderer(options)
    },
    rank: 0,
    dataType: 'json'
  }
];

export default extensions;
