// PNG output through librsvg + cairo (png.h).
#include "lib/report/png.h"

#include <cairo.h>
#include <librsvg/rsvg.h>

#include <cstdio>
#include <filesystem>

#include "lib/util/error.h"

namespace hetu::report {

bool png_available() { return true; }

void write_png(const std::string& svg, const std::string& path) {
  GError* error = nullptr;
  RsvgHandle* handle = rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error);
  if (handle == nullptr) {
    const std::string why = error != nullptr ? error->message : "unknown error";
    if (error != nullptr) g_error_free(error);
    HT_THROW("report: cannot parse the SVG for {}: {}", path, why);
  }
  gdouble width = 0, height = 0;
  if (!rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height)) width = 800, height = 300;
  cairo_surface_t* surface =
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(width), static_cast<int>(height));
  cairo_t* cr = cairo_create(surface);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  const RsvgRectangle viewport{0, 0, width, height};
  const gboolean ok = rsvg_handle_render_document(handle, cr, &viewport, &error);
  const std::string tmp = path + ".tmp";
  const cairo_status_t written = ok ? cairo_surface_write_to_png(surface, tmp.c_str()) : CAIRO_STATUS_WRITE_ERROR;
  cairo_destroy(cr);
  cairo_surface_destroy(surface);
  g_object_unref(handle);
  if (!ok) {
    const std::string why = error != nullptr ? error->message : "unknown error";
    if (error != nullptr) g_error_free(error);
    HT_THROW("report: cannot render {}: {}", path, why);
  }
  HT_CHECK(written == CAIRO_STATUS_SUCCESS, "report: cannot write {}: {}", tmp, cairo_status_to_string(written));
  std::filesystem::rename(tmp, path);
}

}  // namespace hetu::report
