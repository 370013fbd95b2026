//! Member data over HTTP: `"data"` beside `member` in events (one, a batch, several
//! boards), `PUT`/`GET`/`DELETE …/members/{member}/data`, `with=data` on `top`, the member
//! read and `around`; the size bound, null, a member without a total, a trending board and
//! an unknown `with`, each refused with a message saying what to send.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{rejected_codes, spawn_app, unique};

/// `(member, data)` of each entry of a page.
fn data_of(body: &Value) -> Vec<(String, Value)> {
    body["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries in {body}"))
        .iter()
        .map(|e| (e["member"].as_str().unwrap().to_owned(), e["data"].clone()))
        .collect()
}

fn list(items: &[(&str, Value)]) -> Vec<(String, Value)> {
    items
        .iter()
        .map(|(m, d)| (m.to_string(), d.clone()))
        .collect()
}

#[tokio::test]
async fn data_is_set_by_events_and_put_and_read_beside_entries() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h", "1d"]).await;
    let path = format!("/v1/boards/{b}");
    let one = app
        .post(
            &format!("{path}/events"),
            json!({"member": "a", "delta": 5, "data": {"title": "A"}}),
        )
        .await;
    assert_eq!(one.status, StatusCode::OK, "{:?}", one.body);
    let batch = app
        .post(
            &format!("{path}/events"),
            json!({"events": [
                {"member": "b", "delta": 3, "data": null},
                {"member": "c", "delta": 2, "data": "C"},
                {"member": "d", "delta": 1, "data": "x".repeat(1023)},
            ]}),
        )
        .await;
    assert_eq!(batch.status, StatusCode::OK, "{:?}", batch.body);
    assert_eq!(batch.body["accepted"], 2);
    assert_eq!(
        rejected_codes(&batch.body),
        vec![(2, "invalid_member_data")]
    );
    assert_eq!(
        batch.body["rejected"][0]["error"]["message"],
        "invalid member data: 1025 bytes of JSON (compact): at most 1024 are kept per member"
    );

    // Without with=data the page is as it always was.
    let top = app.get(&format!("{path}/top")).await;
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 5}, {"rank": 2, "member": "b", "score": 3},
               {"rank": 3, "member": "c", "score": 2}])
    );
    let top = app.get(&format!("{path}/top?with=data")).await;
    assert_eq!(top.status, StatusCode::OK, "{:?}", top.body);
    assert_eq!(
        top.body["entries"],
        json!([{"rank": 1, "member": "a", "score": 5, "data": {"title": "A"}},
               {"rank": 2, "member": "b", "score": 3, "data": null},
               {"rank": 3, "member": "c", "score": 2, "data": "C"}])
    );

    // PUT on its own, GET, overwrite, DELETE.
    let put = app
        .put(&format!("{path}/members/b/data"), json!({"n": [1, 2]}))
        .await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{:?}", put.body);
    let got = app.get(&format!("{path}/members/b/data")).await;
    assert_eq!(
        (got.status, got.body),
        (StatusCode::OK, json!({"n": [1, 2]}))
    );
    app.put(&format!("{path}/members/b/data"), json!("B")).await;
    assert_eq!(
        app.get(&format!("{path}/members/b/data")).await.body,
        json!("B")
    );
    let deleted = app.delete(&format!("{path}/members/c/data")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let gone = app.get(&format!("{path}/members/c/data")).await;
    assert_eq!(
        (gone.status, gone.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    assert_eq!(
        gone.body["error"]["message"],
        format!("member \"c\" has no data on board \"{b}\"")
    );

    // Bottom pages, percent, score ranges, the member read and around.
    let bottom = app
        .get(&format!("{path}/top?order=asc&limit=2&with=data"))
        .await;
    assert_eq!(
        data_of(&bottom.body),
        list(&[("c", Value::Null), ("b", json!("B"))])
    );
    let percent = app.get(&format!("{path}/top?percent=33&with=data")).await;
    assert_eq!(
        data_of(&percent.body),
        list(&[("a", json!({"title": "A"}))])
    );
    let range = app
        .get(&format!("{path}/top?min_score=3&max_score=3&with=data"))
        .await;
    assert_eq!(data_of(&range.body), list(&[("b", json!("B"))]));
    let member = app.get(&format!("{path}/members/a?with=data")).await;
    assert_eq!(member.body["data"], json!({"title": "A"}));
    let member = app.get(&format!("{path}/members/a")).await;
    assert!(member.body.get("data").is_none(), "{:?}", member.body);
    let around = app
        .get(&format!("{path}/members/b/around?n=1&with=data"))
        .await;
    assert_eq!(
        data_of(&around.body),
        list(&[
            ("a", json!({"title": "A"})),
            ("b", json!("B")),
            ("c", Value::Null)
        ])
    );

    // Several boards: the data is set on each board the event applied to.
    let other = app.board("1h", &["1h"]).await;
    let multi = app
        .post(
            "/v1/events",
            json!({"boards": [b, other], "member": "e", "delta": 1, "data": [1, 2, 3]}),
        )
        .await;
    assert_eq!(multi.status, StatusCode::OK, "{:?}", multi.body);
    for board in [&b, &other] {
        let got = app.get(&format!("/v1/boards/{board}/members/e/data")).await;
        assert_eq!(got.body, json!([1, 2, 3]), "{board}");
    }
    let batch = app
        .post(
            "/v1/events",
            json!({"events": [{"boards": [other], "member": "f", "delta": 1, "data": {"f": 1}}]}),
        )
        .await;
    assert_eq!(batch.status, StatusCode::OK, "{:?}", batch.body);
    let got = app.get(&format!("/v1/boards/{other}/members/f/data")).await;
    assert_eq!(got.body, json!({"f": 1}));
}

#[tokio::test]
async fn bad_member_data_and_reads_are_refused_with_what_to_send() {
    let app = spawn_app().await;
    let b = app.board("1h", &["1h"]).await;
    let path = format!("/v1/boards/{b}");
    app.post(&format!("{path}/events"), json!({"member": "a"}))
        .await;

    // 1,024 bytes fit, 1,025 do not.
    let fits = app
        .put(&format!("{path}/members/a/data"), json!("x".repeat(1022)))
        .await;
    assert_eq!(fits.status, StatusCode::NO_CONTENT, "{:?}", fits.body);
    let over = app
        .put(&format!("{path}/members/a/data"), json!("x".repeat(1023)))
        .await;
    assert_eq!(
        (over.status, over.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_member_data")
    );
    assert_eq!(
        over.body["error"]["message"],
        "invalid member data: 1025 bytes of JSON (compact): at most 1024 are kept per member"
    );
    let null = app
        .put(&format!("{path}/members/a/data"), Value::Null)
        .await;
    assert_eq!(
        (null.status, null.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_member_data")
    );
    let garbled = app
        .client
        .put(format!("{}{path}/members/a/data", app.url))
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    assert_eq!(garbled.status(), StatusCode::BAD_REQUEST);
    // A single event with bad data is refused whole; null data leaves data as it is.
    let one = app
        .post(
            &format!("{path}/events"),
            json!({"member": "a", "data": "x".repeat(1023)}),
        )
        .await;
    assert_eq!(one.code(), "invalid_member_data");
    app.post(
        &format!("{path}/events"),
        json!({"member": "a", "data": null}),
    )
    .await;
    let kept = app.get(&format!("{path}/members/a/data")).await;
    assert_eq!(kept.body.as_str().map(str::len), Some(1022));

    // A member without a total keeps no data.
    let none = app
        .put(&format!("{path}/members/nobody/data"), json!(1))
        .await;
    assert_eq!(
        (none.status, none.code()),
        (StatusCode::NOT_FOUND, "member_not_found")
    );
    assert_eq!(
        none.body["error"]["message"],
        format!(
            "member \"nobody\" has no total in the board's largest window (member data is \
             kept only for members holding one) on board \"{b}\""
        )
    );
    // A write back to 0 takes the data with it (a holds 2: the null-data event counted).
    app.post(
        &format!("{path}/events"),
        json!({"member": "a", "delta": -2}),
    )
    .await;
    let gone = app.get(&format!("{path}/members/a/data")).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    // with= takes data and movement only; a trending board keeps neither.
    let with = app.get(&format!("{path}/top?with=titles")).await;
    assert_eq!(
        (with.status, with.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_query")
    );
    assert_eq!(
        with.body["error"]["message"],
        "invalid query: with=\"titles\" is not known: with=data returns each member's data, \
         with=movement its rank at since (with=data,movement both)"
    );
    let t = unique("t");
    app.put(
        &format!("/v1/boards/{t}"),
        json!({"kind": "trending", "half_life": "1h", "floor": 0.01, "max_age": "3h"}),
    )
    .await;
    let trending = app.get(&format!("/v1/boards/{t}/top?with=data")).await;
    assert_eq!(trending.code(), "invalid_query");
    let event = app
        .post(
            &format!("/v1/boards/{t}/events"),
            json!({"member": "a", "data": 1}),
        )
        .await;
    assert_eq!(event.code(), "invalid_member_data");
    let put = app
        .put(&format!("/v1/boards/{t}/members/a/data"), json!(1))
        .await;
    assert_eq!(
        (put.status, put.code()),
        (StatusCode::CONFLICT, "board_kind")
    );
    // Writing data needs write access like events (open here: no tokens configured).
    let delete = app
        .request(
            Method::DELETE,
            &format!("{path}/members/a/data"),
            None,
            None,
        )
        .await;
    assert_eq!(delete.status, StatusCode::NO_CONTENT);
}
