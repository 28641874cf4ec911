package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// rankAnswer is the body of /api/rank.
type rankAnswer struct {
	Ranking   string  `json:"ranking"`
	Rank      int64   `json:"rank"`
	ProductID string  `json:"product_id"`
	Score     float64 `json:"score"`
	Units     int64   `json:"units"`
	Days      int64   `json:"days"`
	Total     int64   `json:"total"`
	Around    []struct {
		Rank      int64   `json:"rank"`
		ProductID string  `json:"product_id"`
		Score     float64 `json:"score"`
	} `json:"around"`
	Snapshot string `json:"snapshot"`
}

// rank fetches /api/rank and decodes a 200 answer.
func (s *server) rank(t *testing.T, query string) rankAnswer {
	t.Helper()
	var a rankAnswer
	if err := json.Unmarshal([]byte(s.ok(t, "/api/rank?"+query)), &a); err != nil {
		t.Fatalf("/api/rank?%s: %v", query, err)
	}
	return a
}

// pageItems reads every entry of a ranking through its page endpoint:
// cursor pages of 2 (trending: its one page).
func (s *server) pageItems(t *testing.T, ranking string) []map[string]any {
	t.Helper()
	var items []map[string]any
	if ranking == "trending" {
		_, v := s.get(t, "/api/trending?n=100")
		for _, it := range v["items"].([]any) {
			items = append(items, it.(map[string]any))
		}
		return items
	}
	path := map[string]string{"bestsellers-today": "/api/bestsellers/today", "bestsellers-week": "/api/bestsellers/week",
		"most-viewed-today": "/api/most-viewed/today"}[ranking] + "?size=2&cursor="
	for next := ""; ; {
		code, v := s.get(t, path+url.QueryEscape(next))
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, code, v)
		}
		for _, it := range v["items"].([]any) {
			items = append(items, it.(map[string]any))
		}
		if next, _ = v["next"].(string); next == "" {
			return items
		}
	}
}

func TestRankIsThePagePosition(t *testing.T) {
	s := newServer(t)
	for _, ranking := range []string{"bestsellers-today", "bestsellers-week", "most-viewed-today", "trending"} {
		items := s.pageItems(t, ranking)
		if len(items) == 0 {
			t.Fatalf("%s: no entries", ranking)
		}
		for _, it := range items {
			a := s.rank(t, "ranking="+ranking+"&product="+it["product_id"].(string))
			if got := fmt.Sprint(a.Rank, a.Score, a.Total); got != fmt.Sprint(it["rank"], it["score"], len(items)) {
				t.Errorf("%s: rank of %s: rank score total %s, want %v %v %d", ranking, it["product_id"], got, it["rank"], it["score"], len(items))
			}
			if a.Ranking != ranking || a.Around != nil {
				t.Errorf("%s: %+v", ranking, a)
			}
		}
	}
	week := s.rank(t, "ranking=bestsellers-week&product=best-g")
	if week.Rank != 1 || week.Units != 10 || week.Days != 2 || !strings.HasPrefix(week.Snapshot, "best7:2026-12-02@") {
		t.Errorf("best-g this week: %+v", week)
	}
}

func TestRankAroundAtTheEdges(t *testing.T) {
	s := newServer(t)
	// Today: best-c best-b best-a (7 units), best-f best-e best-d (6), best-g (5).
	for query, want := range map[string]string{
		"product=best-c&around=2":  "[1 best-c 7] [2 best-b 7] [3 best-a 7]",
		"product=best-b&around=2":  "[1 best-c 7] [2 best-b 7] [3 best-a 7] [4 best-f 6]",
		"product=best-f&around=1":  "[3 best-a 7] [4 best-f 6] [5 best-e 6]",
		"product=best-g&around=2":  "[5 best-e 6] [6 best-d 6] [7 best-g 5]",
		"product=best-e&around=10": "[1 best-c 7] [2 best-b 7] [3 best-a 7] [4 best-f 6] [5 best-e 6] [6 best-d 6] [7 best-g 5]",
	} {
		a := s.rank(t, "ranking=bestsellers-today&"+query)
		var got []string
		for _, it := range a.Around {
			got = append(got, fmt.Sprintf("[%d %s %v]", it.Rank, it.ProductID, it.Score))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: around %s, want %s", query, strings.Join(got, " "), want)
		}
	}
	code, v := s.get(t, "/api/rank?ranking=bestsellers-today&product=best-a&around=0")
	if _, ok := v["around"]; code != http.StatusOK || ok {
		t.Errorf("around=0: %d %v, want no around", code, v)
	}
}

func TestRankBadInputAndMissing(t *testing.T) {
	s := newServer(t)
	for query, msg := range map[string]string{
		"product=best-a":                                      "ranking: required (one of bestsellers-today, bestsellers-week, most-viewed-today, trending)",
		"ranking=&product=best-a":                             "ranking: required",
		"ranking=bestsellers&product=best-a":                  `ranking: must be one of bestsellers-today, bestsellers-week, most-viewed-today, trending (got "bestsellers")`,
		"ranking=bestsellers/today&product=best-a":            "ranking: must be one of",
		"ranking=trending":                                    "product: required",
		"ranking=trending&product=":                           "product: ",
		"ranking=trending&product=a%20b":                      "product: must be a string of 1..64 printable ASCII bytes",
		"ranking=trending&product=a:b":                        "without '{', '}' or ':'",
		"ranking=trending&product=" + strings.Repeat("x", 65): "65 bytes",
		"ranking=trending&product=hot&around=11":              `around: must be an integer in 0..10 (got "11")`,
		"ranking=trending&product=hot&around=-1":              "around: must be an integer in 0..10",
		"ranking=trending&product=hot&around=two":             "around: must be an integer in 0..10",
		"ranking=trending&product=hot&around=":                "around: must be an integer in 0..10",
		"ranking=trending&product=hot&around=1&around=2":      "around: given more than once",
		"ranking=trending&product=hot&n=3":                    "n: unknown parameter (allowed: ranking, product, around)",
	} {
		code, v := s.get(t, "/api/rank?"+query)
		e := fmt.Sprint(v["error"])
		if code != http.StatusBadRequest || !strings.Contains(e, msg) || strings.Contains(e, "\n") {
			t.Errorf("GET /api/rank?%s: %d %v, want 400 with one line holding %q", query, code, v, msg)
		}
	}
	for _, ranking := range []string{"bestsellers-today", "bestsellers-week", "most-viewed-today", "trending"} {
		code, v := s.get(t, "/api/rank?ranking="+ranking+"&product=nope&around=3")
		want := "product nope: not ranked in " + ranking
		if code != http.StatusNotFound || v["error"] != want {
			t.Errorf("%s, a product without an entry: %d %v, want 404 %q", ranking, code, v, want)
		}
	}
}
