//! The dashboard page at `/`: the boards, their live top-N per window, and a chart of
//! the leaders' per-slot history. One self-contained HTML document (script, styles and
//! the charting library inlined), so it works wherever the router is mounted.

use axum::response::Html;

/// The dashboard page.
pub async fn page() -> Html<&'static str> {
    Html(include_str!("../../assets/dashboard.html"))
}
