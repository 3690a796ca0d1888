"""The views' own models, Qt-free (napari's ViewerModel and `_LayerSlicer`, glue's state objects): for each view
of the app, its own choices, what it was answered, and the questions it needs now (`needs(workspace)`), which the
app's one asker sends (gui/asker.py). engine/views/view.py says what every view model is; one module per view.
"""
