import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Inject, NotFoundException, Optional, Param, Req, Res } from '@nestjs/common';
import type { z } from 'zod';
import { buildOpenApiDocument, type OpenApiPaths } from './openapi.document';

/** Paths and schemas other feature modules add to the document (shadow testing). */
export const OPENAPI_EXTENSIONS = Symbol('OPENAPI_EXTENSIONS');
export interface OpenApiExtension {
  paths: OpenApiPaths;
  schemas: Record<string, z.ZodType>;
}

interface HttpRequest {
  headers: Record<string, string | string[] | undefined>;
  originalUrl: string;
}
interface HttpResponse {
  type(contentType: string): HttpResponse;
  send(body: string | Buffer): void;
  json(body: unknown): void;
  redirect(status: number, url: string): void;
}

/** swagger-ui-dist's files served under /docs/, by name: nothing else of the package (or disk) is reachable. */
const SWAGGER_UI_FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** The package's initializer points at the petstore: ours loads the document beside the page. */
const SWAGGER_INITIALIZER = `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: './openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
  });
};
`;

/** Whether the caller (a browser) asked for HTML before JSON. */
function wantsHtml(request: HttpRequest): boolean {
  const accept = String(request.headers.accept ?? '');
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html !== -1 && (json === -1 || html < json);
}

/**
 * `GET /docs`: the OpenAPI 3.1 document of the REST API as JSON (also at `/docs/openapi.json`),
 * or, for a browser (`Accept: text/html`), Swagger UI (swagger-ui-dist) at `/docs/` showing it.
 */
@Controller('docs')
export class DocsController {
  private document: Record<string, unknown> | null = null;
  private readonly swaggerUiDir = dirname(require.resolve('swagger-ui-dist/package.json'));
  private readonly files = new Map<string, Buffer>();

  constructor(@Optional() @Inject(OPENAPI_EXTENSIONS) private readonly extension: OpenApiExtension | null) {}

  private openApi(): Record<string, unknown> {
    this.document ??= buildOpenApiDocument(this.extension?.paths, this.extension?.schemas);
    return this.document;
  }

  private file(name: string): Buffer {
    let bytes = this.files.get(name);
    if (!bytes) {
      bytes = readFileSync(join(this.swaggerUiDir, name));
      this.files.set(name, bytes);
    }
    return bytes;
  }

  @Get()
  get(@Req() request: HttpRequest, @Res() response: HttpResponse): void {
    if (!wantsHtml(request)) {
      response.json(this.openApi());
      return;
    }
    // The page loads its files relative to itself: from /docs they would resolve under /.
    const path = request.originalUrl.split('?')[0];
    if (!path.endsWith('/')) {
      response.redirect(302, `${path}/`);
      return;
    }
    response.type(SWAGGER_UI_FILES['index.html']).send(this.file('index.html'));
  }

  @Get('openapi.json')
  openApiFile(): Record<string, unknown> {
    return this.openApi();
  }

  @Get('swagger-initializer.js')
  initializer(@Res() response: HttpResponse): void {
    response.type('application/javascript; charset=utf-8').send(SWAGGER_INITIALIZER);
  }

  @Get(':file')
  asset(@Param('file') name: string, @Res() response: HttpResponse): void {
    const type = Object.hasOwn(SWAGGER_UI_FILES, name) ? SWAGGER_UI_FILES[name] : undefined;
    if (!type) throw new NotFoundException(`no /docs/${name}`);
    response.type(type).send(this.file(name));
  }
}
