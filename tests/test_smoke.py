def test_add_and_search(store):
    r = store.add("李四是前端工程师，擅长React和Vue.js开发", subject="lisi")
    assert r.created
    hits = store.search("前端工程师", k=3)
    assert hits[0].memory.id == r.id
