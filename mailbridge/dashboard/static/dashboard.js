// The dashboard's own script, besides htmx. Its pages carry no inline script (their
// Content-Security-Policy refuses it), so what a page asks of the browser is said in
// data-* attributes and done here.

// <form data-confirm="Question?">: submitted only once the member says yes. The
// question is read as text, never as code; the capture phase runs before htmx's own
// listener, so a declined submit reaches nothing else.
document.addEventListener(
  "submit",
  (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || form.dataset.confirm === undefined) {
      return;
    }
    if (!window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      event.stopPropagation();
    }
  },
  true,
);
