// Starts the vendored Swagger UI (loaded just before as a classic script) on this service's
// OpenAPI description. No validator: it would send the description to another site. No deep links:
// they put a link inside each operation's button, which assistive technology cannot reach.
// The one server needs no picker (an unlabelled select in Swagger UI).
const withoutServerPicker = () => ({ wrapComponents: { ServersContainer: () => () => null } });

const root = document.getElementById("swagger-ui");
if (root && window.SwaggerUIBundle) {
  window.SwaggerUIBundle({
    url: root.dataset.openapiUrl,
    domNode: root,
    layout: "BaseLayout",
    presets: [window.SwaggerUIBundle.presets.apis],
    plugins: [withoutServerPicker],
    deepLinking: false,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
  });
}
