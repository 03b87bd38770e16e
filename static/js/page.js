// Behaviour every page shares, kept out of the HTML: the CSP allows no inline handlers.
(function () {
  "use strict";

  // A form with data-confirm asks before it is sent.
  document.addEventListener("submit", function (evt) {
    const message = evt.target.dataset && evt.target.dataset.confirm;
    if (message && !window.confirm(message)) evt.preventDefault();
  });
})();
