//! The dashboard page at `/`: the boards a user picks (kept in the URL), their live top-N
//! per window with movement and a chart of the picked window's leaders, trending boards, a
//! health strip, a member lookup, one chart per counter and the slowest contexts of a
//! stats kind. The page reads all it shows with one `GET v1/dashboard` per refresh (see
//! `docs/api.md`, "The dashboard page"). One self-contained HTML document (script, styles
//! and the charting library inlined), so it works wherever the router is mounted.
//!
//! The charting library is uPlot (MIT), vendored under `assets/vendor/uplot/`; it is
//! spliced into the template once, on the first request.

use std::sync::LazyLock;

use axum::response::Html;

const TEMPLATE: &str = include_str!("../../assets/dashboard.html");
const UPLOT_CSS: &str = include_str!("../../assets/vendor/uplot/uPlot.min.css");
const UPLOT_JS: &str = include_str!("../../assets/vendor/uplot/uPlot.iife.min.js");
const CSS_MARKER: &str = "/*@uplot-css@*/";
const JS_MARKER: &str = "/*@uplot-js@*/";

static PAGE: LazyLock<String> = LazyLock::new(|| {
    TEMPLATE
        .replacen(JS_MARKER, UPLOT_JS, 1)
        .replacen(CSS_MARKER, UPLOT_CSS, 1)
});

/// The dashboard page.
pub async fn page() -> Html<&'static str> {
    Html(PAGE.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_inlines_uplot_once_and_no_marker_is_left() {
        assert!(
            TEMPLATE.matches(CSS_MARKER).count() == 1 && TEMPLATE.matches(JS_MARKER).count() == 1
        );
        let page = PAGE.as_str();
        assert!(!page.contains(CSS_MARKER) && !page.contains(JS_MARKER));
        assert_eq!(page.matches(UPLOT_JS).count(), 1);
        assert_eq!(page.matches(UPLOT_CSS).count(), 1);
        assert_eq!(
            page.len(),
            TEMPLATE.len() + UPLOT_JS.len() + UPLOT_CSS.len() - CSS_MARKER.len() - JS_MARKER.len()
        );
        // Inlined scripts must not end their own element early.
        assert!(!UPLOT_JS.contains("</script"));
        assert!(!UPLOT_CSS.contains("</style"));
    }
}
