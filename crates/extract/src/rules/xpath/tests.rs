//! Unit tests of the module above.

use super::*;

const PRODUCT: &str = r#"<!DOCTYPE html>
<html lang="en">
<head><title>  Trail shoe  |  Shop </title>
<meta property="og:title" content="Trail shoe"></head>
<body>
  <!-- product -->
  <h1 class="title main">
 The   Trail
 shoe
  </h1>
  <div class="offer">
<span class="price" content="129.90">€129,90</span>
<span class="price old" content="149.00">€149,00</span>
  </div>
  <ul class="authors">
<li>Ann <b>Lee</b></li>
<li id="second">Bo Chen</li>
<li>  </li>
  </ul>
  <ul class="items">
<li class="item x"><a href="/a">A</a><span class="price">1</span></li>
<li class="item"><a href="/b">B</a><span class="price">2</span></li>
<li class="item x"><a href="/c">C</a><span class="price">3</span></li>
  </ul>
</body></html>"#;

fn strings(html: &str, expr: &str) -> Vec<String> {
    let dom = Html::parse_document(html);
    let doc = XDoc::new(&dom);
    eval_strings(&doc, &compile(expr).expect("compiles"), None).expect("evaluates")
}

#[test]
fn node_sets_give_one_text_per_node_in_document_order() {
    assert_eq!(strings(PRODUCT, "//h1/text()"), ["The Trail shoe"]);
    assert_eq!(strings(PRODUCT, "//h1"), ["The Trail shoe"]);
    assert_eq!(strings(PRODUCT, "//span[@class='price']/@content"), ["129.90"]);
    assert_eq!(strings(PRODUCT, "//ul[@class='authors']/li"), ["Ann Lee", "Bo Chen"], "the blank item is dropped");
    assert_eq!(strings(PRODUCT, "//li[contains(@class,'x')]/a/@href"), ["/a", "/c"]);
    assert_eq!(strings(PRODUCT, "//ul[@class='items']/li[2]/a"), ["B"]);
    assert_eq!(strings(PRODUCT, "//ul[@class='items']/li[last()]/a"), ["C"]);
    assert_eq!(strings(PRODUCT, "(//li)[position() <= 2]"), ["Ann Lee", "Bo Chen"]);
    assert_eq!(strings(PRODUCT, "//comment()"), ["product"]);
    assert_eq!(strings(PRODUCT, "id('second')"), ["Bo Chen"]);
    assert_eq!(strings(PRODUCT, "/html/@lang"), ["en"]);
    assert_eq!(strings(PRODUCT, "//meta[@property='og:title']/@content"), ["Trail shoe"]);
    // A union is in document order, whatever order it was written in.
    assert_eq!(strings(PRODUCT, "//h1 | //title"), ["Trail shoe | Shop", "The Trail shoe"]);
    assert_eq!(strings(PRODUCT, "//b/ancestor::ul/@class"), ["authors"]);
    assert_eq!(strings(PRODUCT, "//li[@id='second']/preceding-sibling::li"), ["Ann Lee"]);
    assert_eq!(strings(PRODUCT, "//li[@id='second']/following::a[1]"), ["A"]);
    assert!(strings(PRODUCT, "//table").is_empty());
}

#[test]
fn strings_numbers_and_booleans_give_one_text() {
    assert_eq!(strings(PRODUCT, "count(//li)"), ["6"]);
    assert_eq!(strings(PRODUCT, "count(//li) div 4"), ["1.5"]);
    assert_eq!(strings(PRODUCT, "sum(//ul[@class='items']//span)"), ["6"]);
    assert_eq!(strings(PRODUCT, "string(//title)"), ["Trail shoe | Shop"]);
    assert_eq!(strings(PRODUCT, "normalize-space(//h1)"), ["The Trail shoe"]);
    assert_eq!(strings(PRODUCT, "boolean(//h1)"), ["true"]);
    assert_eq!(strings(PRODUCT, "name(//*[@lang])"), ["html"]);
    assert_eq!(strings(PRODUCT, "substring-after(//span[@class='price'], '€')"), ["129,90"]);
    assert!(strings(PRODUCT, "string(//table)").is_empty(), "an empty string is dropped");
}

#[test]
fn relative_paths_start_at_the_context_element() {
    let dom = Html::parse_document(PRODUCT);
    let doc = XDoc::new(&dom);
    let items =
        eval_elements(&doc, &compile("//li[contains(@class, 'item')]").expect("compiles"), None).expect("evaluates");
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|el| el.value().name() == "li"));
    let price = compile(".//span[@class='price']").expect("compiles");
    let link = compile("a/@href").expect("compiles");
    let got: Vec<(Vec<String>, Vec<String>)> = items
        .iter()
        .map(|&el| {
            (
                eval_strings(&doc, &price, Some(el)).expect("evaluates"),
                eval_strings(&doc, &link, Some(el)).expect("evaluates"),
            )
        })
        .collect();
    assert_eq!(got[1], (vec!["2".to_string()], vec!["/b".to_string()]));
    assert_eq!(got[2].0, ["3"]);
    // Absolute paths still start at the root, as XPath has it.
    assert_eq!(eval_strings(&doc, &compile("//h1").expect("compiles"), Some(items[0])).expect("ok").len(), 1);
    // An element of another page is refused, not confused with this one's.
    let other = Html::parse_document(PRODUCT);
    let foreign = other.root_element();
    assert!(eval_strings(&doc, &price, Some(foreign)).is_err());
    // Elements only: text and attribute nodes are left out.
    let mixed = compile("//ul[@class='authors']/li[1]/node() | //h1/@class").expect("compiles");
    let els = eval_elements(&doc, &mixed, None).expect("evaluates");
    assert_eq!(els.iter().map(|e| e.value().name()).collect::<Vec<_>>(), ["b"]);
    assert_eq!(
        eval_elements(&doc, &compile("count(//li)").expect("compiles"), None).err().as_deref(),
        Some("gives a number, not elements")
    );
}

#[test]
fn document_order_is_reading_order_after_the_tree_builder_moved_nodes() {
    // Foster parenting: the text and the <p> written inside the table
    // are moved before it; html5ever creates them after the table's
    // cells, so their node ids come later than the cells'.
    let fostered = "<body><div id=d><table><tr><td>a</td></tr>fostered<p>b</p></table><i>c</i></div></body>";
    assert_eq!(strings(fostered, "//div[@id='d']//text()"), ["fostered", "b", "a", "c"]);
    assert_eq!(strings(fostered, "//td | //p | //i"), ["b", "a", "c"]);
    assert_eq!(strings(fostered, "//div"), ["fosteredbac"]);
    assert_eq!(strings(fostered, "//td/preceding::*[1]"), ["b"], "the <p> now precedes the cell");
    assert_eq!(strings(fostered, "//p/following::text()"), ["a", "c"]);
    // The adoption agency: </b> inside <p> closes the <b> and clones it.
    let misnested = "<body><b>1<p>2</b>3</p>4</body>";
    let dom = Html::parse_document(misnested);
    let doc = XDoc::new(&dom);
    let body = eval_elements(&doc, &compile("//body").expect("compiles"), None).expect("ok");
    assert_eq!(body[0].text().collect::<String>(), "1234");
    assert_eq!(strings(misnested, "//body//text()"), ["1", "2", "3", "4"]);
    assert_eq!(strings(misnested, "//b"), ["1", "2"]);
    assert_eq!(strings(misnested, "//p/b/following-sibling::text()"), ["3"]);
    // Every node-set the evaluator sorts agrees with the tree's own walk.
    for html in [fostered, misnested, PRODUCT] {
        let dom = Html::parse_document(html);
        let doc = XDoc::new(&dom);
        let walk: Vec<String> =
            dom.root_element().descendent_elements().map(|e| e.value().name().to_string()).collect();
        let x = compile("//*").expect("compiles");
        let found: Vec<String> =
            eval_elements(&doc, &x, None).expect("ok").iter().map(|e| e.value().name().to_string()).collect();
        assert_eq!(found, walk, "{html}");
    }
}

#[test]
fn attributes_sort_between_their_element_and_its_children() {
    let html = r#"<div a="1" b="2"><p c="3">t</p></div>"#;
    assert_eq!(strings(html, "//div/@* | //div | //p/@c | //p/text()"), ["t", "1", "2", "3", "t"]);
    assert_eq!(strings(html, "count(//@b/following-sibling::node())"), ["0"], "attributes have no siblings");
    assert_eq!(strings(html, "name(//@c/preceding::*)"), ["head"]);
    assert_eq!(strings(html, "//@b/following::text()"), ["t"]);
    assert_eq!(strings(html, "//@c/parent::p"), ["t"]);
    assert_eq!(strings(html, "name(//@c)"), ["c"]);
    assert_eq!(strings(html, "count(//p/@*)"), ["1"]);
}

#[test]
fn html_names_match_by_local_name() {
    let html = r##"<body><svg viewBox="0 0 1 1"><a xlink:href="#top">s</a></svg><math><mi>x</mi></math></body>"##;
    assert_eq!(strings(html, "//svg/a/@href"), ["#top"]);
    assert_eq!(strings(html, "//svg/@viewBox"), ["0 0 1 1"]);
    assert_eq!(strings(html, "//math/mi"), ["x"]);
    assert_eq!(strings(html, "namespace-uri(//svg)"), Vec::<String>::new());
    assert_eq!(strings("<p>x</p>", "count(//node())"), ["5"], "html, head, body, p and its text");
    assert_eq!(strings("<!DOCTYPE html><p>x</p>", "count(/node())"), ["1"]);
}

#[test]
fn bad_expressions_say_what_is_wrong() {
    let err = |e: &str| compile(e).expect_err(e);
    assert_eq!(err("//h1[@class='x'"), "unexpected end of input, expected ']', at the end");
    assert_eq!(err("//p[1]]"), "unexpected trailing input at character 7 (`]`)");
    assert_eq!(err("//a[@href='x]"), "unterminated string literal at character 11 (`'x]`)");
    assert_eq!(err(" "), "empty expression");
    assert!(err("//li[foo(.)]").starts_with("unknown function `foo()`"), "{}", err("//li[foo(.)]"));
    assert_eq!(err("contains(@class)"), "`contains()` takes 2 argument(s), not 1");
    assert_eq!(err("concat('a')"), "`concat()` takes at least 2 argument(s), not 1");
    assert_eq!(err("//svg:path"), "`svg:path`: names on an HTML page have no namespace prefix; write `path`");
    assert_eq!(err("//a[@xlink:*]"), "`xlink:*`: names on an HTML page have no namespace prefix; write `*`");
    assert_eq!(err("//a[$x]"), "`$x`: rules have no variables");
    // Type errors are found on evaluation.
    let dom = Html::parse_document(PRODUCT);
    let doc = XDoc::new(&dom);
    let e = eval_strings(&doc, &compile("count('a')").expect("compiles"), None).expect_err("a string");
    assert!(e.contains("node-set"), "{e}");
    assert_eq!(format!("{:?}", compile("//h1").expect("compiles")), r#"XPath("//h1")"#);
}

#[test]
fn a_large_page() {
    let mut html = String::from("<html><body><table>");
    for i in 0..2_500 {
        html.push_str(&format!(
            "<tr class='r{}'><td>{i}</td><td><a href='/p/{i}'>item {i}</a></td><td>x</td></tr>",
            i % 2
        ));
    }
    html.push_str("</table></body></html>");
    let dom = Html::parse_document(&html);
    let doc = XDoc::new(&dom);
    assert_eq!(eval_strings(&doc, &compile("count(//*)").expect("ok"), None).expect("ok"), ["12505"]);
    let rows = eval_elements(&doc, &compile("//tr[@class='r1']").expect("ok"), None).expect("ok");
    assert_eq!(rows.len(), 1_250);
    let href = compile("td/a/@href").expect("ok");
    assert_eq!(eval_strings(&doc, &href, Some(rows[1_249])).expect("ok"), ["/p/2499"]);
    let all = eval_strings(&doc, &compile("//td[1]").expect("ok"), None).expect("ok");
    assert_eq!(all.len(), 2_500);
    assert!(all.iter().enumerate().all(|(i, s)| *s == i.to_string()));
    assert_eq!(eval_strings(&doc, &compile("count(//td)").expect("ok"), None).expect("ok"), ["7500"]);
}
