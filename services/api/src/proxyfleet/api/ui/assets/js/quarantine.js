// The quarantine dialog (admin tokens): asks why, then sets the proxy aside through the
// API. A refusal's message stays in the dialog, with the reason as typed.

import { setText } from "./dom.js";

export class QuarantineDialog {
  /** send(id, reason) quarantines and resolves to the proxy; onDone(proxy) shows it;
   *  describe(err) is the message for a failure (null: already handled, e.g. signed out). */
  constructor(dialog, { send, onDone, describe }) {
    Object.assign(this, { dialog, send, onDone, describe });
    this.form = dialog.querySelector("form");
    this.target = dialog.querySelector("[data-testid=quarantine-proxy]");
    this.reason = dialog.querySelector("[name=reason]");
    this.error = dialog.querySelector("[data-testid=quarantine-error]");
    this.submit = dialog.querySelector("button[type=submit]");
    this.proxyId = "";
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.confirm();
    });
    dialog.querySelector("[data-action=cancel]").addEventListener("click", () => this.close());
    dialog.addEventListener("close", () => {
      this.proxyId = ""; // closed by Cancel, Escape or a sign-out: an answer still due is dropped
    });
  }

  open(proxyId) {
    this.proxyId = proxyId;
    setText(this.target, proxyId);
    setText(this.error, "");
    this.reason.value = "";
    this.submit.disabled = false;
    if (!this.dialog.open) this.dialog.showModal();
    this.reason.focus();
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }

  async confirm() {
    const id = this.proxyId;
    const reason = this.reason.value.trim();
    if (!id) return;
    if (!reason) {
      setText(this.error, "Say why: the reason is shown with the proxy and in its event.");
      return;
    }
    setText(this.error, "");
    this.submit.disabled = true;
    try {
      const proxy = await this.send(id, reason);
      if (this.proxyId === id) this.close();
      this.onDone(proxy);
    } catch (err) {
      const message = this.describe(err);
      if (message !== null && this.proxyId === id) {
        setText(this.error, `Quarantine of ${id} failed: ${message}`);
      }
    } finally {
      this.submit.disabled = false;
    }
  }
}
