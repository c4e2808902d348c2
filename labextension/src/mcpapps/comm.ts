/**
 * The comm of one view output to the kernel that made it (target `purra.app`, purra_jupyter/ui/apps.py:
 * COMM_TARGET): opened once the notebook's kernel is ready, if it has one; the kernel's side says whether it still
 * holds the view. It carries the view's requests that wait for the kernel (at most PENDING_MAX). Without it (a
 * reopened notebook) the view's requests are answered "no live session".
 */

import type { Kernel } from '@jupyterlab/services';
import type { Widget } from '@lumino/widgets';

import { type JSONObject, asObject } from '../dom';
import { panelOf } from '../widgetoutput/widgets';
import {
  type KernelEvent,
  type Message,
  REFUSED,
  type RequestId,
  Waiting,
  busy,
  fromKernel,
  kernelRequest,
  refusal
} from './protocol';

/** The comm target of the kernel's side. */
export const COMM_TARGET = 'purra.app';

/** What the output does with the comm's life: opened, a message of the kernel (protocol.ts: fromKernel), closed. */
export interface IViewCommHandlers {
  opened(): void;
  received(event: KernelEvent): void;
  closed(): void;
}

export class ViewComm {
  constructor(private readonly _handlers: IViewCommHandlers) {}

  /** Whether the comm is open: the view's calls can reach the kernel. */
  get isOpen(): boolean {
    return this._comm !== null;
  }

  /** Open the comm for the view `viewId` of `output`, once its notebook's kernel is ready (no notebook: never). */
  connect(output: Widget, viewId: string): void {
    if (this._connecting || this._comm !== null) {
      return;
    }
    const panel = panelOf(output);
    if (panel === null || viewId === '') {
      return;
    }
    this._connecting = true;
    void panel.sessionContext.ready.then(() => {
      this._connecting = false;
      const kernel = panel.sessionContext.session?.kernel ?? null;
      if (kernel === null || output.isDisposed || this._comm !== null) {
        return;
      }
      this._open(kernel, viewId);
    });
  }

  /** How many requests of the view wait for the kernel. */
  get waiting(): number {
    return this._waiting.size;
  }

  send(data: JSONObject): void {
    this._comm?.send(data as never); // (our JSON is read-only: the comm's type wants a mutable one)
  }

  /**
   * Send a request of the view on to the kernel, under the host's own id: null once sent, else the view's refusal
   * (`noLiveSession`'s words without a comm, busy() when PENDING_MAX wait already).
   */
  forward(id: RequestId, method: string, params: JSONObject, noLiveSession: string): Message | null {
    if (this._comm === null) {
      return refusal(id, REFUSED, noLiveSession);
    }
    const local = this._waiting.admit(id);
    if (local === null) {
      const refused = busy();
      return refusal(id, refused.code, refused.message);
    }
    this.send(kernelRequest(local, method, params));
    return null;
  }

  /** Every request still waiting, as its refusal with `words` for the view; forgotten. */
  refuseWaiting(words: string): Message[] {
    return this._waiting.drain().map(viewId => refusal(viewId, REFUSED, words));
  }

  close(): void {
    this._comm?.close();
    this._comm = null;
  }

  private _open(kernel: Kernel.IKernelConnection, viewId: string): void {
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch {
      return; // the kernel has no comms
    }
    this._comm = comm;
    comm.onMsg = message => this._handlers.received(fromKernel(asObject(message.content.data) ?? {}, this._waiting));
    comm.onClose = () => {
      this._comm = null;
      this._handlers.closed();
    };
    this._handlers.opened();
    void comm.open({ viewId });
  }

  private _comm: Kernel.IComm | null = null;
  private _connecting = false;
  private readonly _waiting = new Waiting();
}
