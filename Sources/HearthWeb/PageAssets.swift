// The page's three files as responses (their text is in PageFiles, written by scripts/web-page). Sent whole and
// uncompressed: the three together are a few kilobytes gzipped, and compressing on the hub would cost CPU and a
// library for little.

enum PageAssets {
    static let index = response(PageFiles.indexHTML, type: "text/html; charset=utf-8")
    static let css = response(PageFiles.appCSS, type: "text/css; charset=utf-8")
    static let js = response(PageFiles.appJS, type: "text/javascript; charset=utf-8")
    static let germanJS = response(PageFiles.germanJS, type: "text/javascript; charset=utf-8")
    /// The page in German: the same file with `<html lang="de">`, which tells app.js to use the catalogue of de.js,
    /// loaded before it (only here: an English page does not load the German strings).
    static let germanIndex = response(
        PageFiles.indexHTML.replacing(#"<html lang="en">"#, with: #"<html lang="de">"#)
            .replacing(#"<script src="/app.js" defer></script>"#,
                       with: #"<script src="/de.js" defer></script><script src="/app.js" defer></script>"#),
        type: "text/html; charset=utf-8")

    static func asset(_ path: String, acceptLanguage: String? = nil) -> WebResponse? {
        switch path {
        case "/", "/index.html":
            var page = PageLanguage.chosen(by: acceptLanguage) == .german ? germanIndex : index
            page.headers.append(("Vary", "Accept-Language"))
            return page
        case "/app.css": return css
        case "/app.js": return js
        case "/de.js": return germanJS
        default: return nil
        }
    }

    private static func response(_ text: String, type: String) -> WebResponse {
        // `no-cache`: revalidated on each load, so a new hearthd's page is never mixed with an old one's script.
        WebResponse(
            status: 200, headers: [("Content-Type", type), ("Cache-Control", "no-cache")],
            body: Array((text + "\n").utf8))
    }
}
