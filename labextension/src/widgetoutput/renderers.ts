/**
 * The static view of a widget output (widgets.ts): what its payload holds, read defensively, and its buttons drawn
 * dead with the line saying why. Pure DOM functions, unit-tested in jsdom; every string is set as text.
 */

/** Why the live widget is not shown: a key of the payload's `labels`. */
export type Dead = 'restarted' | 'gone' | 'noKernel';

/** Neutral stand-ins for a payload without its labels (the words are purra_jupyter's: records.widget_labels). */
const FALLBACK_LABELS: Readonly<Record<Dead, string>> = {
  restarted: 'restarted',
  gone: 'gone',
  noKernel: 'no kernel'
};

/** CSS classes (style/base.css). */
export const CLASS = {
  root: 'jp-PurraWidget',
  static: 'jp-PurraWidget-static',
  view: 'jp-PurraWidget-view',
  buttons: 'jp-PurraWidget-buttons',
  button: 'jp-PurraWidget-button',
  why: 'jp-PurraWidget-why'
};

/** What the payload holds, read defensively (a saved file may hold anything). */
export interface IWidgetData {
  readonly modelId: string;
  readonly html: string;
  readonly text: string;
  readonly buttons: ReadonlyArray<string>;
  readonly labels: Readonly<Record<Dead, string>>;
}

/** The payload's fields, each checked; anything missing or of the wrong type becomes empty or its fallback. */
export function widgetData(value: unknown): IWidgetData {
  const data = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (key: string): string => (typeof data[key] === 'string' ? (data[key] as string) : '');
  const given = (typeof data.labels === 'object' && data.labels !== null ? data.labels : {}) as Record<string, unknown>;
  const label = (key: Dead): string => (typeof given[key] === 'string' ? (given[key] as string) : FALLBACK_LABELS[key]);
  return {
    modelId: text('model_id'),
    html: text('html'),
    text: text('text'),
    buttons: Array.isArray(data.buttons) ? data.buttons.filter((b): b is string => typeof b === 'string') : [],
    labels: { restarted: label('restarted'), gone: label('gone'), noKernel: label('noKernel') }
  };
}

/** The disabled buttons and the line under a static view; `why` null while it is not known yet. */
export function deadControls(data: IWidgetData, why: Dead | null): HTMLElement[] {
  const buttons = document.createElement('div');
  buttons.className = CLASS.buttons;
  for (const name of data.buttons) {
    const button = document.createElement('button');
    button.className = CLASS.button;
    button.type = 'button';
    button.disabled = true;
    button.textContent = name;
    if (why !== null) {
      button.title = data.labels[why];
    }
    buttons.appendChild(button);
  }
  if (why === null) {
    return [buttons];
  }
  const line = document.createElement('div');
  line.className = CLASS.why;
  line.textContent = data.labels[why];
  return [buttons, line];
}
