from filterd.bayes.statistics import not_ready


def test_a_model_is_ready_once_every_class_has_enough_documents() -> None:
    reason = not_ready(["ham"], [500], 20)
    assert reason is not None and "two classes" in reason
    assert (
        not_ready(["ham", "spam"], [500, 3], 20)
        == "needs 20 learned documents per class: 'spam' has 3"
    )
    assert not_ready(["ham", "spam"], [500, 20], 20) is None
