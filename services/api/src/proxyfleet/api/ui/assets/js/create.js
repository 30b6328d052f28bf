// The create form (admin tokens): provider, zone (or spread over them), count.

import { el, setText } from "./dom.js";

export class CreateForm {
  /** create(body) posts it; onCreated(items) shows them; describe(err) is the message to
   *  show for a failure (null: already handled, e.g. signed out). */
  constructor(form, { create, onCreated, describe }) {
    Object.assign(this, { form, create, onCreated, describe });
    this.provider = form.querySelector("[name=provider]");
    this.zone = form.querySelector("[name=zone]");
    this.count = form.querySelector("[name=count]");
    this.submit = form.querySelector("button[type=submit]");
    const section = form.closest("section");
    this.result = section.querySelector("[data-testid=create-result]");
    this.error = section.querySelector("[data-testid=create-error]");
    this.providers = [];
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    this.provider.addEventListener("change", () => this.fillZones());
  }

  setProviders(providers) {
    this.providers = providers;
    const selected = this.provider.value;
    this.provider.replaceChildren(
      ...providers.map((p) => el("option", { value: p.name, text: `${p.name} (${p.type})` })),
    );
    if (providers.some((p) => p.name === selected)) this.provider.value = selected;
    this.fillZones();
  }

  fillZones() {
    const provider = this.providers.find((p) => p.name === this.provider.value);
    this.zone.replaceChildren(
      el("option", { value: "", text: "any (spread)" }),
      ...(provider?.zones || []).map((z) => el("option", { value: z, text: z })),
    );
  }

  async send() {
    setText(this.result, "");
    setText(this.error, "");
    const body = { provider: this.provider.value, count: Number(this.count.value) };
    if (this.zone.value) body.zone = this.zone.value;
    this.submit.disabled = true;
    try {
      const batch = await this.create(body);
      this.onCreated(batch.items);
      const ids = batch.items.map((p) => p.id).join(", ");
      setText(this.result, `Created ${batch.items.length}: ${ids}`);
    } catch (err) {
      const message = this.describe(err);
      if (message !== null) setText(this.error, `Create failed: ${message}`);
    } finally {
      this.submit.disabled = false;
    }
  }
}
